package io.handoff.cluster;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import static io.handoff.cluster.EtcdMembershipTest.ids;
import static io.handoff.cluster.EtcdMembershipTest.member;
import static org.assertj.core.api.Assertions.assertThat;

/** etcd stopped under a running membership and registrations, then started again (skipped when etcd is not installed). */
class EtcdOutageTest
{
    private static final Duration WAIT = Duration.ofSeconds(15);

    private EtcdProcess etcd;
    private ClusterConfig.Etcd config;

    @BeforeEach
    void startEtcd()
            throws Exception
    {
        etcd = EtcdProcess.startOrSkip();
        config = new ClusterConfig.Etcd(List.of(etcd.endpoint()), "/handoff-test/outage/", Duration.ofSeconds(2), Duration.ofMillis(500),
                Duration.ofMillis(200));
    }

    @AfterEach
    void stopEtcd()
            throws Exception
    {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void anOutageKeepsTheLastMembersServingMarkedStaleAndRecovers()
            throws Exception
    {
        Member prefill = member("prefill-0", MemberRole.PREFILL, "inc-p", 30001);
        Member decode = member("decode-0", MemberRole.DECODE, "inc-d", 30002);
        try (EtcdRegistration prefillRegistration = (EtcdRegistration) EtcdRegistration.start(config, prefill);
                EtcdRegistration decodeRegistration = (EtcdRegistration) EtcdRegistration.start(config, decode);
                EtcdMembership membership = new EtcdMembership(config)) {
            Views views = new Views();
            membership.start(views);
            MembershipView before = views.await("listing both", v -> ids(v).equals(Set.of("prefill-0", "decode-0")) && v.stale().isEmpty(), WAIT);

            // etcd restarts with its data: the same leases survive, the view is stale meanwhile and fresh after.
            etcd.stop();
            MembershipView stale = views.await("marked stale", v -> v.stale().isPresent(), WAIT);
            assertThat(stale.members()).as("the last members keep serving").isEqualTo(before.members());
            assertThat(membership.current().stale()).isPresent();
            etcd.start();
            MembershipView fresh = views.await("fresh again", v -> v.stale().isEmpty() && ids(v).equals(ids(before)), WAIT);
            assertThat(fresh.members()).containsExactlyInAnyOrderElementsOf(before.members());

            // etcd comes back without its data: every lease is gone, the registrations put their keys again under new ones.
            long prefillLease = prefillRegistration.lease();
            long decodeLease = decodeRegistration.lease();
            int from = views.all().size();
            etcd.stop();
            views.await("marked stale", v -> v.stale().isPresent(), WAIT);
            etcd.wipe();
            etcd.start();
            MembershipView recovered = views.await("fresh with both members again",
                    v -> v.stale().isEmpty() && ids(v).equals(Set.of("prefill-0", "decode-0")), WAIT);
            assertThat(recovered.members()).containsExactlyInAnyOrder(prefill, decode);
            assertThat(prefillRegistration.lease()).as("a new lease").isNotEqualTo(prefillLease);
            assertThat(decodeRegistration.lease()).as("a new lease").isNotEqualTo(decodeLease);
            assertThat(views.all().subList(from, views.all().size())).as("while stale, the members are the last known ones")
                    .filteredOn(v -> v.stale().isPresent()).allSatisfy(v -> assertThat(v.members()).isEqualTo(before.members()));
            assertThat(views.oneThread()).isTrue();
        }
    }
}
