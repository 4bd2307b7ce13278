package io.handoff.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import io.handoff.cli.Main;
import io.handoff.cluster.Cluster;
import io.handoff.cluster.ClusterConfig;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.Registration;
import io.handoff.status.LocalMember;
import io.handoff.testkit.etcd.EtcdProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff cluster status --discovery etcd} against a real etcd on loopback, with a prefill and a decode in this
 * JVM registered the way {@code handoff serve} registers them (skipped when etcd is not installed).
 */
class ClusterStatusEtcdTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private static EtcdProcess etcd;
    private static LocalMember prefill;
    private static LocalMember decode;
    private static final List<Registration> registrations = new ArrayList<>();

    @BeforeAll
    static void start()
            throws Exception
    {
        etcd = EtcdProcess.startOrSkip();
        prefill = LocalMember.prefill();
        decode = LocalMember.decode();
        registrations.add(Cluster.register(config(), new Member("prefill-0", MemberRole.PREFILL, prefill.incarnation(), prefill.url(), "", 64, false)));
        registrations.add(Cluster.register(config(), new Member("decode-0", MemberRole.DECODE, decode.incarnation(), decode.url(), "", 64, false)));
    }

    @AfterAll
    static void stop()
            throws InterruptedException
    {
        registrations.forEach(Registration::close);
        if (decode != null) {
            decode.close();
        }
        if (prefill != null) {
            prefill.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void theRegisteredMembersAreListedWithTheirRolesAndIncarnations()
            throws IOException
    {
        CliRun result = run("cluster", "status", "--json", "-Dhandoff.cluster.discovery=etcd", "-Dhandoff.cluster.etcd.endpoints=" + etcd.endpoint());

        assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
        JsonNode status = JSON.readTree(result.stdout());
        assertThat(status.path("discovery").asText()).isEqualTo("etcd");
        assertThat(status.path("source").asText()).isEqualTo("etcd [" + etcd.endpoint() + "] /handoff/members/");
        assertThat(status.path("stale").booleanValue()).isFalse();
        JsonNode p = member(status, "prefill-0");
        JsonNode d = member(status, "decode-0");
        assertThat(p.path("role").asText()).isEqualTo("prefill");
        assertThat(d.path("role").asText()).isEqualTo("decode");
        assertThat(p.path("listed_incarnation").asText()).isEqualTo(prefill.incarnation());
        assertThat(p.path("incarnation").asText()).isEqualTo(prefill.incarnation());
        assertThat(d.path("incarnation").asText()).isEqualTo(decode.incarnation());
        assertThat(p.path("capacity").intValue()).isEqualTo(64);
        for (JsonNode member : List.of(p, d)) {
            assertThat(member.path("health").asText()).isEqualTo("ok");
            assertThat(member.path("problems")).isEmpty();
        }
    }

    @Test
    void aRegistrationWhoseProcessIsGoneIsListedUnreachableAndOneFromAnOldIncarnationIsFlagged()
            throws Exception
    {
        URI gone = URI.create("http://127.0.0.1:" + freePort());
        try (Registration dead = Cluster.register(config(), new Member("decode-9", MemberRole.DECODE, "0123456789abcdef", gone, "", 0, false));
                Registration old = Cluster.register(config(), new Member("prefill-old", MemberRole.PREFILL, "feedfacefeedface", prefill.url(), "", 0, false))) {
            CliRun result = run("cluster", "status", "--json", "--discovery", "etcd", "-Dhandoff.cluster.etcd.endpoints=" + etcd.endpoint());

            assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
            JsonNode status = JSON.readTree(result.stdout());
            JsonNode unreachable = member(status, "decode-9");
            assertThat(unreachable.path("health").asText()).isEqualTo("unreachable");
            assertThat(unreachable.path("reason").asText()).contains("connection refused");
            assertThat(unreachable.path("incarnation").asText()).isEqualTo("0123456789abcdef");
            JsonNode stale = member(status, "prefill-old");
            assertThat(stale.path("incarnation").asText()).isEqualTo(prefill.incarnation());
            assertThat(stale.path("problems").get(0).asText()).startsWith("membership lists incarnation feedfacefeedface but " + prefill.incarnation() + " runs");

            CliRun table = run("cluster", "status", "--discovery", "etcd", "-Dhandoff.cluster.etcd.endpoints=" + etcd.endpoint());
            assertThat(table.exitCode()).isEqualTo(Main.OK);
            assertThat(table.stdout()).contains("4 members", "decode-9: unreachable: connection refused");
        }
    }

    private static ClusterConfig config()
    {
        return ClusterConfig.from(ConfigFactory.parseMap(Map.of("handoff.cluster.discovery", "etcd", "handoff.cluster.etcd.endpoints", etcd.endpoint().toString()))
                .withFallback(ConfigFactory.parseResources(ClusterConfig.class.getClassLoader(), "reference.conf")).resolve());
    }

    private static JsonNode member(JsonNode status, String id)
    {
        for (JsonNode member : status.path("members")) {
            if (member.path("id").asText().equals(id)) {
                return member;
            }
        }
        throw new AssertionError("no member " + id + " in " + status);
    }

    private static int freePort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static CliRun run(String... args)
    {
        return CliRun.of(args);
    }
}
