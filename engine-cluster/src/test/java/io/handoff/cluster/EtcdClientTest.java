package io.handoff.cluster;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The client against answers no healthy etcd gives: nothing listening, not JSON, too large, refusals. No etcd needed. */
class EtcdClientTest
{
    private static ClusterConfig.Etcd config(URI... endpoints)
    {
        return new ClusterConfig.Etcd(List.of(endpoints), "/handoff/members/", Duration.ofSeconds(2), Duration.ofMillis(500), Duration.ofMillis(100));
    }

    private static URI deadEndpoint()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return URI.create("http://127.0.0.1:" + socket.getLocalPort());
        }
    }

    @Test
    void unreachableEtcdAtStartNamesEveryEndpoint()
            throws Exception
    {
        URI first = deadEndpoint();
        URI second = deadEndpoint();
        Member self = new Member("prefill-0", MemberRole.PREFILL, "inc", URI.create("http://127.0.0.1:30001"), "", 0, false);
        assertThatThrownBy(() -> EtcdRegistration.start(config(first, second), self))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("no etcd endpoint answered /v3/lease/grant")
                .hasMessageContaining(first + ": ")
                .hasMessageContaining(second + ": ");
        try (EtcdMembership membership = new EtcdMembership(config(first, second))) {
            assertThatThrownBy(() -> membership.start(view -> {}))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("no etcd endpoint answered /v3/kv/range")
                    .hasMessageContaining(first + ": ")
                    .hasMessageContaining(second + ": ");
            assertThat(membership.current().members()).isEmpty();
        }
    }

    @Test
    void theNextEndpointAnswersWhenTheFirstIsDown()
            throws Exception
    {
        String range = "{\"header\":{\"revision\":\"7\"},\"kvs\":[{\"key\":\"L2hhbmRvZmYvbWVtYmVycy9h\",\"value\":\"e30=\",\"lease\":\"12\",\"mod_revision\":\"5\"}]}";
        try (CannedEtcd etcd = new CannedEtcd(200, range.getBytes(StandardCharsets.UTF_8));
                EtcdClient client = new EtcdClient(config(deadEndpoint(), etcd.endpoint()))) {
            EtcdClient.Range answer = client.range("/handoff/members/");
            assertThat(answer.revision()).isEqualTo(7);
            assertThat(answer.kvs()).singleElement().satisfies(kv -> {
                assertThat(kv.key()).isEqualTo("/handoff/members/a");
                assertThat(new String(kv.value(), StandardCharsets.UTF_8)).isEqualTo("{}");
                assertThat(kv.lease()).isEqualTo(12);
            });
        }
    }

    @Test
    void malformedAnswersAreErrorsNamingTheEndpointAndWhatWasWrong()
            throws Exception
    {
        assertRangeFails("<html>not json</html>", "is not JSON");
        assertRangeFails("[1,2]", "not a JSON object");
        assertRangeFails("{\"kvs\":[]}", "a range answer without a header");
        assertRangeFails("{\"header\":{\"revision\":\"x\"}}", "'revision' = \"x\", not an int64");
        assertRangeFails("{\"header\":{\"revision\":\"3\"},\"kvs\":{}}", "'kvs' is not an array");
        assertRangeFails("{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"L290aGVyL2E=\"}]}", "outside the watched prefix");
        assertRangeFails("{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"!!\"}]}", "not base64");
        assertRangeFails("[".repeat(100), "is not JSON");
    }

    @Test
    void anAnswerOverTheLimitIsRefused()
            throws Exception
    {
        byte[] huge = new byte[EtcdClient.MAX_ANSWER + 1];
        java.util.Arrays.fill(huge, (byte) ' ');
        try (CannedEtcd etcd = new CannedEtcd(200, huge); EtcdClient client = new EtcdClient(config(etcd.endpoint()))) {
            assertThatThrownBy(() -> client.range("/handoff/members/"))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining(etcd.endpoint().toString())
                    .hasMessageContaining("more than " + EtcdClient.MAX_ANSWER + " bytes");
        }
    }

    @Test
    void aRefusalIsReportedWithEtcdsCodeAndNotRetriedElsewhere()
            throws Exception
    {
        String notFound = "{\"error\":\"etcdserver: requested lease not found\",\"message\":\"etcdserver: requested lease not found\",\"code\":5}";
        try (CannedEtcd etcd = new CannedEtcd(404, notFound.getBytes(StandardCharsets.UTF_8)); EtcdClient client = new EtcdClient(config(etcd.endpoint()))) {
            assertThatThrownBy(() -> client.put("/handoff/members/a", new byte[0], 99))
                    .isInstanceOfSatisfying(EtcdClient.Refused.class, e -> assertThat(e.code).isEqualTo(EtcdClient.NOT_FOUND))
                    .hasMessageContaining("requested lease not found");
            client.revoke(99);
        }
    }

    private static void assertRangeFails(String answer, String expected)
            throws Exception
    {
        try (CannedEtcd etcd = new CannedEtcd(200, answer.getBytes(StandardCharsets.UTF_8)); EtcdClient client = new EtcdClient(config(etcd.endpoint()))) {
            assertThatThrownBy(() -> client.range("/handoff/members/"))
                    .as(answer)
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("etcd at " + etcd.endpoint())
                    .hasMessageContaining(expected);
        }
    }
}
