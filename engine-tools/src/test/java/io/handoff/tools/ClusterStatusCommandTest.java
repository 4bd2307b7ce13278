package io.handoff.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.handoff.cli.Main;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.runtime.Engine;
import io.handoff.http.base.ServerConfig;
import io.handoff.router.Router;
import io.handoff.router.RouterConfig;
import io.handoff.status.LocalMember;
import io.handoff.trace.Timelines;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code handoff cluster status} against real prefill, decode and colocated servers in this JVM, on loopback. */
class ClusterStatusCommandTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private static LocalMember prefill;
    private static LocalMember decode;

    @BeforeAll
    static void startServers()
            throws IOException
    {
        prefill = LocalMember.prefill();
        decode = LocalMember.decode();
    }

    @AfterAll
    static void stopServers()
    {
        if (decode != null) {
            decode.close();
        }
        if (prefill != null) {
            prefill.close();
        }
    }

    @Test
    void theJsonListsBothRolesWithTheirIncarnationsHealthAndLoad()
            throws IOException
    {
        CliRun result = run("cluster", "status", "--json", "--prefill", prefill.url().toString(), "--decode", decode.url().toString());

        assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
        JsonNode status = JSON.readTree(result.stdout());
        assertThat(status.path("discovery").asText()).isEqualTo("static");
        assertThat(status.path("source").asText()).isEqualTo("static lists (--prefill, --decode)");
        assertThat(status.path("stale").booleanValue()).isFalse();
        assertThat(status.path("members")).hasSize(2);
        JsonNode p = member(status, prefill.url());
        JsonNode d = member(status, decode.url());
        assertThat(p.path("role").asText()).isEqualTo("prefill");
        assertThat(d.path("role").asText()).isEqualTo("decode");
        assertThat(p.path("incarnation").asText()).isEqualTo(prefill.incarnation());
        assertThat(d.path("incarnation").asText()).isEqualTo(decode.incarnation()).isNotEqualTo(prefill.incarnation());
        // static lists cannot know an incarnation in advance: the server told it
        assertThat(p.path("listed_incarnation").isNull()).isTrue();
        for (JsonNode member : List.of(p, d)) {
            assertThat(member.path("health").asText()).isEqualTo("ok");
            assertThat(member.path("reason").isNull()).isTrue();
            assertThat(member.path("answered_role").asText()).isEqualTo(member.path("role").asText());
            assertThat(member.path("transfer_backend").asText()).isEqualTo("mooncake");
            assertThat(member.path("requests_running").intValue()).isZero();
            assertThat(member.path("requests_waiting").intValue()).isZero();
            assertThat(member.path("kv_pages_total").intValue()).isEqualTo(LocalMember.POOL_PAGES);
            assertThat(member.path("kv_pages_used").isInt()).isTrue();
            assertThat(member.path("prefix_cache_hit_rate").isNumber()).isTrue();
            assertThat(member.path("draining").booleanValue()).isFalse();
            assertThat(member.path("problems")).isEmpty();
        }
        assertThat(p.path("control").asText()).matches("127\\.0\\.0\\.1:[0-9]+|.+:[0-9]+");
        assertThat(d.path("suspect_peers")).isEmpty();
    }

    @Test
    void aMemberThatIsDownIsListedUnreachableWithTheReasonAndTheExitCodeIsStill0()
            throws IOException
    {
        URI down = URI.create("http://127.0.0.1:" + freePort());

        CliRun result = run("cluster", "status", "--json", "--prefill", prefill.url().toString(), "--decode", decode.url().toString(),
                "--decode", down.toString());

        assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
        JsonNode status = JSON.readTree(result.stdout());
        assertThat(status.path("members")).hasSize(3);
        JsonNode gone = member(status, down);
        assertThat(gone.path("role").asText()).isEqualTo("decode");
        assertThat(gone.path("health").asText()).isEqualTo("unreachable");
        assertThat(gone.path("reason").asText()).contains("connection refused");
        assertThat(gone.path("incarnation").isNull()).isTrue();
        assertThat(gone.path("kv_pages_total").isNull()).isTrue();
        assertThat(member(status, decode.url()).path("health").asText()).isEqualTo("ok");
    }

    @Test
    void theTableHasOneRowPerMemberWithShortenedIncarnationsAndANoteForEachUnreachableOne()
    {
        URI down = URI.create("http://127.0.0.1:" + freePort());

        CliRun result = run("cluster", "status", "--prefill", prefill.url().toString(), "--decode", decode.url().toString(), "--decode", down.toString());

        assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
        List<String> lines = result.stdout().lines().toList();
        assertThat(lines.get(0)).isEqualTo("membership: static, static lists (--prefill, --decode), 3 members");
        assertThat(lines.get(1)).startsWith("MEMBER").containsSubsequence("ROLE", "INCARNATION", "HTTP", "HEALTH", "LOAD", "KV PAGES", "CACHE HIT", "DRAINING");
        String prefillRow = row(lines, prefill.url());
        assertThat(prefillRow.split("\\s{2,}")).containsExactly(prefill.url().toString(), "prefill", prefill.incarnation().substring(0, 8),
                prefill.url().toString(), "ok", "0 run, 0 wait", prefillRow.split("\\s{2,}")[6], prefillRow.split("\\s{2,}")[7], "no");
        assertThat(prefillRow.split("\\s{2,}")[6]).endsWith("/" + LocalMember.POOL_PAGES);
        assertThat(prefillRow.split("\\s{2,}")[7]).matches("[0-9]+\\.[0-9]%");
        assertThat(row(lines, decode.url())).contains("decode", decode.incarnation().substring(0, 8)).doesNotContain(decode.incarnation());
        assertThat(row(lines, down)).contains("decode", "unreachable");
        // every column starts at the same place on every row
        int healthColumn = lines.get(1).indexOf("HEALTH");
        assertThat(prefillRow.substring(healthColumn)).startsWith("ok ");
        assertThat(row(lines, down).substring(healthColumn)).startsWith("unreachable ");
        assertThat(lines).contains(down + ": unreachable: connection refused (is it running?)");
    }

    @Test
    void aColocatedServerListedAsAPrefillIsFlagged()
            throws IOException
    {
        try (LocalMember colocated = new LocalMember(Optional.empty(), Map.of())) {
            CliRun result = run("cluster", "status", "--json", "--prefill", colocated.url().toString(), "--decode", decode.url().toString());

            assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
            JsonNode member = member(JSON.readTree(result.stdout()), colocated.url());
            assertThat(member.path("answered_role").asText()).isEqualTo("colocated");
            assertThat(member.path("problems").get(0).asText()).isEqualTo("listed as prefill but its /bootstrap says role colocated");
        }
    }

    @Test
    void withApiKeysTheCallsCarryTheDeploymentsKeyAndWithoutItTheMetricsAreRefused()
            throws IOException
    {
        try (LocalMember guarded = new LocalMember(Optional.empty(), Map.of("handoff.server.api-keys", "[\"key-1\", \"key-2\"]"))) {
            CliRun withKey = run("cluster", "status", "--json", "-Dhandoff.server.api-keys=[\"key-1\"]", "--prefill", guarded.url().toString(),
                    "--decode", decode.url().toString());
            CliRun without = run("cluster", "status", "--json", "--prefill", guarded.url().toString(), "--decode", decode.url().toString());

            assertThat(withKey.exitCode()).as(withKey.stderr()).isEqualTo(Main.OK);
            JsonNode keyed = member(JSON.readTree(withKey.stdout()), guarded.url());
            assertThat(keyed.path("kv_pages_total").intValue()).isEqualTo(LocalMember.POOL_PAGES);
            assertThat(keyed.path("answered_role").asText()).isEqualTo("colocated");
            JsonNode refused = member(JSON.readTree(without.stdout()), guarded.url());
            // /health is open to load balancers; /bootstrap and /metrics want the key
            assertThat(refused.path("health").asText()).isEqualTo("ok");
            assertThat(refused.path("kv_pages_total").isNull()).isTrue();
            assertThat(refused.path("problems").toString()).contains("GET /metrics answered 401");
        }
    }

    @Test
    void theRoutersBackendsAreTheMembershipWithRouter()
            throws Exception
    {
        RouterConfig routerConfig;
        try (Engine engine = Engine.start(new ConfigSource(Optional.empty(), Map.of(), Map.of()))) {
            routerConfig = RouterConfig.from(engine.config().config());
        }
        Router router = Router.start(ServerConfig.loopback(), routerConfig, List.of(prefill.url()), List.of(decode.url()), new Timelines(16));
        try {
            CliRun result = run("cluster", "status", "--json", "--router", "http://127.0.0.1:" + router.address().getPort());

            assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
            JsonNode status = JSON.readTree(result.stdout());
            assertThat(status.path("source").asText()).isEqualTo("router http://127.0.0.1:" + router.address().getPort() + " (GET /backends)");
            JsonNode p = member(status, prefill.url());
            assertThat(p.path("incarnation").asText()).isEqualTo(prefill.incarnation());
            // the router lists the incarnation it learned from the prefill's /bootstrap: the same process
            assertThat(p.path("listed_incarnation").asText()).isEqualTo(prefill.incarnation());
            assertThat(p.path("problems")).isEmpty();
            assertThat(member(status, decode.url()).path("role").asText()).isEqualTo("decode");
        }
        finally {
            router.shutdown(java.time.Duration.ofSeconds(1));
        }
    }

    @Test
    void hostileMembersAreUnreachableWithTheReason()
            throws IOException
    {
        CountDownLatch release = new CountDownLatch(1);
        HttpServer garbage = hostile(exchange -> "<html>not a handoff server</html>".getBytes(StandardCharsets.UTF_8), null);
        // just over the limit: room enough to arrive within the timeout on a busy machine
        HttpServer huge = hostile(exchange -> new byte[(1 << 20) + 4096], null);
        HttpServer silent = hostile(exchange -> new byte[0], release);
        try {
            CliRun result = run("cluster", "status", "--json", "--timeout", "3s", "--prefill", url(garbage).toString(), "--decode", url(huge).toString(),
                    "--decode", url(silent).toString());

            assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
            JsonNode status = JSON.readTree(result.stdout());
            assertThat(member(status, url(garbage)).path("health").asText()).isEqualTo("unreachable");
            assertThat(member(status, url(garbage)).path("reason").asText()).isEqualTo("GET /health: not JSON");
            assertThat(member(status, url(huge)).path("reason").asText()).contains("more than 1048576 bytes");
            assertThat(member(status, url(silent)).path("reason").asText()).isEqualTo("no answer within 3000 ms (--timeout)");
        }
        finally {
            release.countDown();
            garbage.stop(0);
            huge.stop(0);
            silent.stop(0);
        }
    }

    @Test
    void anUnhealthyMemberAndUnreadableFieldsAreSaidNotGuessed()
            throws IOException
    {
        HttpServer stopping = scripted(Map.of("/health", new Canned(503, "{\"error\": {\"message\": \"the server is shutting down\"}}")));
        HttpServer odd = scripted(Map.of(
                "/health", new Canned(200, "{\"status\": \"ok\", \"suspect_peers\": [\"10.0.0.9:7001\", 42, \"x\\u001b[2J\"]}"),
                "/bootstrap", new Canned(200, "{\"role\": \"decode\", \"incarnation\": \"\\u001b]0;owned\\u0007\", \"transfer_backend\": 7}"),
                "/metrics", new Canned(200, "handoff_kv_pool_pages 64\nhandoff_kv_pages{state=\"free\"} 65\nhandoff_running_requests 1.5\n"
                        + "handoff_prefix_cache_hit_rate 7\n")));
        try {
            CliRun result = run("cluster", "status", "--json", "--prefill", url(stopping).toString(), "--decode", url(odd).toString());

            assertThat(result.exitCode()).as(result.stderr()).isEqualTo(Main.OK);
            JsonNode status = JSON.readTree(result.stdout());
            JsonNode down = member(status, url(stopping));
            assertThat(down.path("health").asText()).isEqualTo("unhealthy");
            assertThat(down.path("reason").asText()).isEqualTo("GET /health answered 503: the server is shutting down");
            JsonNode member = member(status, url(odd));
            assertThat(member.path("health").asText()).isEqualTo("ok");
            assertThat(member.path("suspect_peers")).extracting(JsonNode::asText).containsExactly("10.0.0.9:7001");
            assertThat(member.path("incarnation").isNull()).isTrue();
            assertThat(member.path("transfer_backend").isNull()).isTrue();
            assertThat(member.path("kv_pages_total").intValue()).isEqualTo(64);
            assertThat(member.path("kv_pages_used").isNull()).isTrue();
            assertThat(member.path("requests_running").isNull()).isTrue();
            assertThat(member.path("prefix_cache_hit_rate").isNull()).isTrue();
            assertThat(member.path("problems")).extracting(JsonNode::asText).containsExactlyInAnyOrder(
                    "/metrics reports more free KV pages (65) than its pool holds (64)",
                    "/metrics reports handoff_running_requests 1.5, not a count",
                    "/metrics reports handoff_prefix_cache_hit_rate 7.0, not a share between 0 and 1");
        }
        finally {
            stopping.stop(0);
            odd.stop(0);
        }
    }

    @Test
    void anUnreachableEtcdIsExit1NamingTheEndpointsAndTheKeyToCheck()
    {
        String endpoint = "http://127.0.0.1:" + freePort();

        CliRun result = run("cluster", "status", "--discovery", "etcd", "-Dhandoff.cluster.etcd.endpoints=" + endpoint, "-Dhandoff.cluster.etcd.request-timeout=1s");

        assertThat(result.exitCode()).isEqualTo(Main.FAILURE);
        assertThat(result.stdout()).isEmpty();
        assertThat(result.stderr()).contains("handoff cluster status: could not read the membership from etcd", endpoint, "/handoff/members/",
                "etcdctl --endpoints=" + endpoint + " get --prefix /handoff/members/");
    }

    @Test
    void withoutAMembershipSourceOrWithListsForAStoreItIsAUsageError()
    {
        CliRun none = run("cluster", "status");
        CliRun mixed = run("cluster", "status", "--discovery", "etcd", "-Dhandoff.cluster.etcd.endpoints=http://127.0.0.1:2379", "--prefill", "127.0.0.1:1");
        CliRun badTimeout = run("cluster", "status", "--timeout", "2", "--prefill", "127.0.0.1:1");
        CliRun badDiscovery = run("cluster", "status", "--discovery", "consul");

        assertThat(none.exitCode()).isEqualTo(Main.USAGE);
        assertThat(none.stderr()).contains("give --prefill and --decode URLs, or --router URL", "see 'handoff cluster status --help'");
        assertThat(mixed.exitCode()).isEqualTo(Main.USAGE);
        assertThat(mixed.stderr()).contains("--prefill, --decode and --router are for static discovery; handoff.cluster.discovery is etcd");
        assertThat(badTimeout.exitCode()).isEqualTo(Main.USAGE);
        assertThat(badTimeout.stderr()).contains("--timeout must be a duration with a unit, e.g. 2s or 500ms, was '2'");
        assertThat(badDiscovery.exitCode()).isEqualTo(Main.USAGE);
        assertThat(badDiscovery.stderr()).contains("--discovery: handoff.cluster.discovery is 'consul': expected static, etcd or kubernetes");
    }

    private interface Body
    {
        byte[] of(com.sun.net.httpserver.HttpExchange exchange)
                throws IOException;
    }

    /** A loopback server that answers every path 200 with {@code body}; with {@code hold}, it sends headers and then waits for it. */
    private static HttpServer hostile(Body body, CountDownLatch hold)
            throws IOException
    {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            byte[] bytes = body.of(exchange);
            exchange.sendResponseHeaders(200, hold != null ? 0 : bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
                if (hold != null) {
                    out.flush();
                    hold.await();
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
        return server;
    }

    private record Canned(int status, String body) {}

    /** A loopback server with a canned answer per path (404 for the others). */
    private static HttpServer scripted(Map<String, Canned> answers)
            throws IOException
    {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            Canned answer = answers.getOrDefault(exchange.getRequestURI().getPath(), new Canned(404, "{}"));
            byte[] bytes = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(answer.status(), bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.start();
        return server;
    }

    private static URI url(HttpServer server)
    {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    private static JsonNode member(JsonNode status, URI url)
    {
        List<JsonNode> found = new ArrayList<>();
        status.path("members").forEach(member -> {
            if (member.path("http").asText().equals(url.toString())) {
                found.add(member);
            }
        });
        assertThat(found).as("members at " + url + " in " + status).hasSize(1);
        return found.getFirst();
    }

    private static String row(List<String> lines, URI url)
    {
        return lines.stream().filter(line -> line.startsWith(url + " ")).findFirst().orElseThrow(() -> new AssertionError("no row for " + url + " in " + lines));
    }

    private static int freePort()
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
        catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static CliRun run(String... args)
    {
        return CliRun.of(args);
    }
}
