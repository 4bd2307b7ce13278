package io.handoff.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Pod;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.Map;

import static io.handoff.cluster.PodJson.pod;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PodMembersTest
{
    private final PodMembers members = new PodMembers("handoff.io/role", "http");

    @Test
    void aReadyPrefillPodIsAMemberNamedByItsPodLeavingItsIncarnationToTheServersBootstrap()
            throws Exception
    {
        Pod pod = pod("prefill-0", "prefill", true, 3, "1").editMetadata()
                .addToAnnotations(Map.of("handoff.io/compatibility", "mla-f32-16", "handoff.io/capacity", "4096")).endMetadata().build();

        assertThat(members.member(json(pod))).contains(new Member("prefill-0", MemberRole.PREFILL, "",
                URI.create("http://" + PodJson.ip("prefill-0") + ":30000"), "mla-f32-16", 4096, false));
    }

    @Test
    void anIpv6PodIpIsBracketed()
            throws Exception
    {
        Pod pod = pod("decode-0", "decode", true, 0, "1").editStatus().withPodIP("fd00:10::5").endStatus().build();

        assertThat(members.member(json(pod))).hasValueSatisfying(m -> assertThat(m.http()).isEqualTo(URI.create("http://[fd00:10::5]:30000")));
    }

    @Test
    void podsOfAnotherRoleNotReadyOrWithoutIpAreNoMembers()
            throws Exception
    {
        assertThat(members.member(json(pod("router-0", "router", true, 0, "1").build()))).isEmpty();
        assertThat(members.member(json(pod("prefill-0", "prefill", false, 0, "1").build()))).isEmpty();
        assertThat(members.member(json(pod("prefill-0", "prefill", true, 0, "1").editStatus().withPodIP(null).endStatus().build()))).isEmpty();
    }

    @Test
    void aPodBeingDeletedIsDrainingEvenOnceItIsNoLongerReady()
            throws Exception
    {
        Pod pod = pod("decode-0", "decode", false, 0, "1").editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata().build();

        assertThat(members.member(json(pod))).hasValueSatisfying(m -> assertThat(m.draining()).isTrue());
    }

    @Test
    void hostileFieldsAreRefusedNamingThePodAndTheField()
            throws Exception
    {
        Pod address = pod("prefill-0", "prefill", true, 0, "1").editStatus().withPodIP("10.0.0.1@evil.example:80/x").endStatus().build();
        Pod capacity = pod("prefill-1", "prefill", true, 0, "1").editMetadata().addToAnnotations("handoff.io/capacity", "-1").endMetadata().build();
        Pod compatibility = pod("prefill-2", "prefill", true, 0, "1").editMetadata().addToAnnotations("handoff.io/compatibility", "a b\nc").endMetadata().build();
        Pod name = pod("-x", "prefill", true, 0, "1").build();
        Pod port = pod("prefill-4", "prefill", true, 0, "1").editSpec().editFirstContainer().editFirstPort().withContainerPort(70000).endPort()
                .endContainer().endSpec().build();

        assertThatThrownBy(() -> members.member(json(address))).hasMessageContaining("prefill-0").hasMessageContaining("podIP");
        assertThatThrownBy(() -> members.member(json(capacity))).hasMessageContaining("prefill-1").hasMessageContaining("handoff.io/capacity");
        assertThatThrownBy(() -> members.member(json(compatibility))).hasMessageContaining("prefill-2").hasMessageContaining("compatibility");
        assertThatThrownBy(() -> members.member(json(name))).hasMessageContaining("member id '-x'");
        assertThatThrownBy(() -> members.member(json(port))).hasMessageContaining("prefill-4").hasMessageContaining("containerPort");
    }

    private static JsonNode json(Pod pod)
            throws Exception
    {
        return KubernetesApi.MAPPER.readTree(PodJson.SERIALIZATION.asJson(pod));
    }
}
