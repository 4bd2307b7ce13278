package io.handoff.cluster;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MemberTest
{
    private static Member member(String id, String incarnation, String http)
    {
        return new Member(id, MemberRole.PREFILL, incarnation, URI.create(http), "tiny-mla@0011223344556677", 128, false);
    }

    @Test
    void aWellFormedRecordIsKeptAndItsAddressNormalised()
    {
        Member member = member("prefill-0", "3f2a", "http://10.0.0.5:30000/");
        assertThat(member.http()).isEqualTo(URI.create("http://10.0.0.5:30000"));
        assertThat(member.asDraining().draining()).isTrue();
        assertThat(member.asDraining().sameIncarnation(member)).isTrue();
        assertThat(member("prefill-0", "", "http://10.0.0.5:30000").sameIncarnation(member("prefill-0", "", "http://10.0.0.5:30000")))
                .as("an unknown incarnation is never the same as another").isFalse();
    }

    @Test
    void storeValuesThatCouldNameSomethingElseAreRefusedWithTheReason()
    {
        assertThatThrownBy(() -> member("", "a", "http://h:1")).hasMessageContaining("member id '' is not 1 to 253");
        assertThatThrownBy(() -> member("a b", "a", "http://h:1")).hasMessageContaining("member id 'a b'");
        assertThatThrownBy(() -> member("x".repeat(300), "a", "http://h:1")).hasMessageContaining("...");
        assertThatThrownBy(() -> member("p", "bad\ninc", "http://h:1")).hasMessageContaining("incarnation 'bad?inc'");
        assertThatThrownBy(() -> member("p", "a", "file:///etc/passwd")).hasMessageContaining("is not an http:// or https:// URL");
        assertThatThrownBy(() -> member("p", "a", "http://h")).hasMessageContaining("does not name a host and a port");
        assertThatThrownBy(() -> member("p", "a", "http://u:pw@h:1")).hasMessageContaining("without user info, query or fragment");
        assertThatThrownBy(() -> member("p", "a", "http://h:1/?x=1")).hasMessageContaining("without user info, query or fragment");
        assertThatThrownBy(() -> new Member("p", MemberRole.DECODE, "a", URI.create("http://h:1"), "has space", 0, false))
                .hasMessageContaining("compatibility hash 'has space'");
        assertThatThrownBy(() -> new Member("p", MemberRole.DECODE, "a", URI.create("http://h:1"), "", -1, false))
                .hasMessageContaining("capacity of member p is negative");
    }

    @Test
    void aViewListsEachIdOnceAndSaysWhenItIsStale()
    {
        Member a = member("a", "1", "http://h:1");
        Member b = new Member("b", MemberRole.DECODE, "2", URI.create("http://h:2"), "", 0, false);
        MembershipView view = MembershipView.of(List.of(a, b));
        assertThat(view.of(MemberRole.PREFILL)).containsExactly(a);
        assertThat(view.of(MemberRole.DECODE)).containsExactly(b);
        assertThat(view.stale()).isEmpty();
        assertThat(view.staleBecause("etcd down").stale()).contains("etcd down");
        assertThat(view.staleBecause("etcd down").members()).containsExactly(a, b);
        assertThatThrownBy(() -> MembershipView.of(List.of(a, member("a", "3", "http://h:3")))).hasMessageContaining("more than once");
    }

    @Test
    void staticMembershipNamesEachServerByItsUrlWithNoIncarnationYet()
    {
        StaticMembership membership = new StaticMembership(List.of(URI.create("http://10.0.0.1:30000")), List.of(URI.create("http://10.0.0.2:30000/")));
        List<MembershipView> seen = new java.util.ArrayList<>();
        membership.start(seen::add);
        assertThat(seen).hasSize(1);
        Member prefill = seen.getFirst().of(MemberRole.PREFILL).getFirst();
        assertThat(prefill.id()).isEqualTo("http://10.0.0.1:30000");
        assertThat(prefill.incarnation()).isEmpty();
        assertThat(seen.getFirst().of(MemberRole.DECODE).getFirst().http()).isEqualTo(URI.create("http://10.0.0.2:30000"));
        assertThat(membership.current()).isEqualTo(seen.getFirst());
    }
}
