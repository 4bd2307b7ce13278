package io.handoff.cluster;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** Registrations and a membership following them, against a real etcd (skipped when etcd is not installed). */
class EtcdMembershipTest
{
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static EtcdProcess etcd;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private ClusterConfig.Etcd config;
    private EtcdClient client;

    @BeforeAll
    static void startEtcd()
            throws Exception
    {
        etcd = EtcdProcess.startOrSkip();
    }

    @AfterAll
    static void stopEtcd()
            throws Exception
    {
        if (etcd != null) {
            etcd.close();
        }
    }

    @BeforeEach
    void prefix(TestInfo test)
    {
        config = new ClusterConfig.Etcd(List.of(etcd.endpoint()), "/handoff-test/" + test.getTestMethod().orElseThrow().getName() + "/",
                Duration.ofSeconds(2), Duration.ofSeconds(1), Duration.ofMillis(200));
        client = new EtcdClient(config);
    }

    @AfterEach
    void closeAll()
            throws Exception
    {
        for (AutoCloseable closeable : opened.reversed()) {
            closeable.close();
        }
        client.close();
    }

    static Member member(String id, MemberRole role, String incarnation, int port)
    {
        return new Member(id, role, incarnation, URI.create("http://127.0.0.1:" + port), "llama-7b.gqa.p16.bf16-ab12", 4096, false);
    }

    private EtcdRegistration register(Member member)
            throws Exception
    {
        EtcdRegistration registration = (EtcdRegistration) EtcdRegistration.start(config, member);
        opened.add(registration);
        return registration;
    }

    private Views follow()
            throws Exception
    {
        EtcdMembership membership = new EtcdMembership(config);
        opened.add(membership);
        Views views = new Views();
        membership.start(views);
        assertThat(views.all()).as("start returns once the first view was handed over").isNotEmpty();
        return views;
    }

    static Set<String> ids(MembershipView view)
    {
        return view.members().stream().map(Member::id).collect(Collectors.toSet());
    }

    static Member find(MembershipView view, String id)
    {
        return view.members().stream().filter(member -> member.id().equals(id)).findFirst().orElse(null);
    }

    @Test
    void aRegisteredMemberIsListedWithEveryField()
            throws Exception
    {
        Instant before = Instant.now().minusSeconds(1);
        Member prefill = member("prefill-0", MemberRole.PREFILL, "inc-1", 30001);
        register(prefill);
        Views views = follow();

        MembershipView view = views.await("listing prefill-0", v -> ids(v).equals(Set.of("prefill-0")), WAIT);
        assertThat(view.members()).containsExactly(prefill);
        assertThat(view.stale()).isEmpty();

        EtcdClient.KeyValue kv = client.range(config.prefix()).kvs().getFirst();
        assertThat(kv.key()).isEqualTo(config.prefix() + "prefill-0");
        assertThat(kv.lease()).as("the key is attached to a lease").isNotZero();
        MemberRecord record = MemberRecord.parse("prefill-0", kv.value());
        assertThat(record.member()).isEqualTo(prefill);
        assertThat(record.registeredAt()).isBetween(before, Instant.now());
    }

    @Test
    void twoMembersAreListedAndDrainingReachesTheView()
            throws Exception
    {
        Member prefill = member("prefill-0", MemberRole.PREFILL, "inc-p", 30001);
        Member decode = member("decode-0", MemberRole.DECODE, "inc-d", 30002);
        register(prefill);
        EtcdRegistration decodeRegistration = register(decode);
        Views views = follow();

        MembershipView both = views.await("listing both", v -> ids(v).equals(Set.of("prefill-0", "decode-0")), WAIT);
        assertThat(both.of(MemberRole.PREFILL)).containsExactly(prefill);
        assertThat(both.of(MemberRole.DECODE)).containsExactly(decode);

        decodeRegistration.draining();
        MembershipView draining = views.await("with decode-0 draining", v -> find(v, "decode-0") != null && find(v, "decode-0").draining(), WAIT);
        assertThat(find(draining, "decode-0")).isEqualTo(decode.asDraining());
        assertThat(find(draining, "prefill-0")).isEqualTo(prefill);
        assertThat(views.oneThread()).as("views are handed over on one thread").isTrue();
    }

    @Test
    void aClosedRegistrationDisappears()
            throws Exception
    {
        EtcdRegistration registration = register(member("decode-0", MemberRole.DECODE, "inc-1", 30002));
        Views views = follow();
        views.await("listing decode-0", v -> ids(v).contains("decode-0"), WAIT);

        registration.close();
        views.await("without decode-0", v -> v.members().isEmpty(), WAIT);
        assertThat(client.range(config.prefix()).kvs()).as("revoking the lease deleted the key at once").isEmpty();
    }

    @Test
    void aClosedMembershipHandsOverNothingMore()
            throws Exception
    {
        EtcdMembership closed = new EtcdMembership(config);
        Views before = new Views();
        closed.start(before);
        closed.close();
        Views open = follow();

        register(member("prefill-0", MemberRole.PREFILL, "inc-1", 30001));
        open.await("listing prefill-0 on the open membership", v -> ids(v).contains("prefill-0"), WAIT);
        assertThat(before.all()).as("the closed one handed over only its first view").hasSize(1);
        assertThat(closed.current().members()).isEmpty();
    }

    @Test
    void aMemberThatStopsRenewingIsDrainedThenRemovedWhenItsLeaseExpires()
            throws Exception
    {
        EtcdRegistration lost = register(member("prefill-lost", MemberRole.PREFILL, "inc-1", 30001));
        Member alive = member("prefill-alive", MemberRole.PREFILL, "inc-2", 30003);
        register(alive);
        Views views = follow();
        views.await("listing both", v -> ids(v).equals(Set.of("prefill-lost", "prefill-alive")), WAIT);
        int from = views.all().size();

        lost.abandon();
        MembershipView last = views.await("without prefill-lost", v -> !ids(v).contains("prefill-lost"), WAIT);
        List<MembershipView> after = views.all().subList(from - 1, views.all().size());
        int removed = after.indexOf(last);
        assertThat(after.subList(0, removed)).as("prefill-lost is handed over as draining before its key goes")
                .anyMatch(v -> find(v, "prefill-lost") != null && find(v, "prefill-lost").draining());
        assertThat(last.members()).containsExactly(alive);
    }

    @Test
    void hostileValuesUnderThePrefixAreIgnoredAndTheOthersListed()
            throws Exception
    {
        byte[] huge = new byte[2_000_000];
        Arrays.fill(huge, (byte) '{');
        client.put(config.prefix() + "not-json", "this is not JSON".getBytes(StandardCharsets.UTF_8), 0);
        client.put(config.prefix() + "wrong-role", record("router", "http://127.0.0.1:30009"), 0);
        client.put(config.prefix() + "huge", huge, 0);
        // Over the limit of one answer once base64-encoded: the prefix is read key by key.
        client.put(config.prefix() + "huger", hugest(), 0);
        Member prefill = member("prefill-0", MemberRole.PREFILL, "inc-1", 30001);
        register(prefill);
        Views views = follow();
        views.await("listing prefill-0", v -> ids(v).equals(Set.of("prefill-0")), WAIT);

        // The same, arriving through the watch.
        client.put(config.prefix() + "bad-url", record("decode", "ftp://127.0.0.1:30010"), 0);
        client.put(config.prefix() + "huge-2", huge, 0);
        client.put(config.prefix() + "bad id!", record("decode", "http://127.0.0.1:30011"), 0);
        client.put(config.prefix() + "prefill-0x", "[1,2,3]".getBytes(StandardCharsets.UTF_8), 0);
        Member decode = member("decode-0", MemberRole.DECODE, "inc-2", 30002);
        register(decode);
        MembershipView view = views.await("listing both valid members", v -> ids(v).equals(Set.of("prefill-0", "decode-0")), WAIT);
        assertThat(view.members()).containsExactlyInAnyOrder(prefill, decode);
        assertThat(views.all()).as("hostile values do not break the watch").allSatisfy(v -> assertThat(v.stale()).isEmpty());

        // A watch message over the limit ends the stream: the view is stale until the prefix is read afresh.
        client.put(config.prefix() + "huger-2", hugest(), 0);
        views.await("stale after a refused watch message", v -> v.stale().isPresent(), WAIT);
        views.await("fresh again", v -> v.stale().isEmpty() && ids(v).equals(Set.of("prefill-0", "decode-0")), WAIT);
        assertThat(views.all()).allSatisfy(v -> assertThat(ids(v)).isSubsetOf("prefill-0", "decode-0"));

        // A member's key overwritten with garbage drops the member.
        client.put(config.prefix() + "decode-0", "garbage".getBytes(StandardCharsets.UTF_8), 0);
        views.await("without the garbled decode-0", v -> ids(v).equals(Set.of("prefill-0")), WAIT);
    }

    @Test
    void aRestartedMemberIsListedWithItsNewIncarnation()
            throws Exception
    {
        EtcdRegistration first = register(member("prefill-0", MemberRole.PREFILL, "inc-old", 30001));
        Views views = follow();
        views.await("listing the first incarnation", v -> find(v, "prefill-0") != null && find(v, "prefill-0").incarnation().equals("inc-old"), WAIT);
        long oldLease = first.lease();

        first.abandon();
        Member restarted = member("prefill-0", MemberRole.PREFILL, "inc-new", 30004);
        EtcdRegistration second = register(restarted);
        MembershipView view = views.await("listing the new incarnation", v -> restarted.equals(find(v, "prefill-0")), WAIT);
        assertThat(view.members()).containsExactly(restarted);

        // The old process's lease expiring does not take the key the new one put.
        Views.await("the old lease expired", () -> {
            try {
                return client.timeToLive(oldLease).gone();
            }
            catch (Exception e) {
                throw new AssertionError(e);
            }
        }, WAIT);
        assertThat(client.range(config.prefix()).kvs()).singleElement().satisfies(kv -> assertThat(kv.lease()).isEqualTo(second.lease()));
        assertThat(views.all().getLast().members()).containsExactly(restarted);
    }

    @Test
    void aProcessThatLostItsLeaseDoesNotOverwriteANewerIncarnation()
            throws Exception
    {
        EtcdRegistration older = register(member("decode-0", MemberRole.DECODE, "inc-old", 30002));
        Member newer = member("decode-0", MemberRole.DECODE, "inc-new", 30005);
        EtcdRegistration newerRegistration = register(newer);
        Views views = follow();
        views.await("listing the newer incarnation", v -> newer.equals(find(v, "decode-0")), WAIT);

        // The older process is still alive: draining, or losing its lease and registering again, must not take the key.
        older.draining();
        long lost = older.lease();
        client.revoke(lost);
        Views.await("the older process on a new lease", () -> older.lease() != lost, WAIT);
        older.draining();
        assertThat(client.range(config.prefix()).kvs()).singleElement().satisfies(kv -> {
            assertThat(kv.lease()).isEqualTo(newerRegistration.lease());
            assertThat(MemberRecord.parse("decode-0", kv.value()).member()).isEqualTo(newer);
        });
        assertThat(views.all()).allSatisfy(v -> assertThat(find(v, "decode-0")).isIn(null, newer));

        // Once the newer one is gone, the id is free and the older (still running) process is listed again.
        newerRegistration.close();
        MembershipView back = views.await("listing the older incarnation", v -> find(v, "decode-0") != null && find(v, "decode-0").incarnation().equals("inc-old"), WAIT);
        assertThat(find(back, "decode-0").draining()).isTrue();
    }

    @Test
    void aLeaseLostBehindTheRegistrationsBackIsReplacedWithTheSameIncarnation()
            throws Exception
    {
        Member decode = member("decode-0", MemberRole.DECODE, "inc-1", 30002);
        EtcdRegistration registration = register(decode);
        Views views = follow();
        views.await("listing decode-0", v -> ids(v).contains("decode-0"), WAIT);
        long lease = registration.lease();

        client.revoke(lease);
        views.await("without decode-0", v -> v.members().isEmpty(), WAIT);
        MembershipView back = views.await("listing decode-0 again", v -> ids(v).contains("decode-0"), WAIT);
        assertThat(back.members()).containsExactly(decode);
        assertThat(registration.lease()).as("a new lease").isNotEqualTo(lease);
    }

    /** A value whose base64 form exceeds what one answer may hold. */
    private static byte[] hugest()
    {
        byte[] value = new byte[EtcdClient.MAX_ANSWER * 4 / 5];
        Arrays.fill(value, (byte) 'x');
        return value;
    }

    @Test
    void aKeyDeletedBehindALiveRegistrationIsPutBack()
            throws Exception
    {
        Member prefill = member("prefill-0", MemberRole.PREFILL, "inc-1", 30001);
        EtcdRegistration registration = register(prefill);
        Views views = follow();
        views.await("listing prefill-0", v -> ids(v).contains("prefill-0"), WAIT);
        long lease = registration.lease();

        client.delete(config.prefix() + "prefill-0");
        views.await("without prefill-0", v -> v.members().isEmpty(), WAIT);
        MembershipView back = views.await("listing prefill-0 again", v -> ids(v).contains("prefill-0"), WAIT);
        assertThat(back.members()).containsExactly(prefill);
        assertThat(registration.lease()).as("under the same lease").isEqualTo(lease);
    }

    private static byte[] record(String role, String http)
    {
        return ("{\"role\":\"" + role + "\",\"incarnation\":\"x\",\"http\":\"" + http + "\",\"compatibility\":\"h\",\"capacity\":1,\"draining\":false,"
                + "\"registered_at\":\"2026-01-01T00:00:00Z\"}").getBytes(StandardCharsets.UTF_8);
    }
}
