package io.handoff.cluster;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

import static io.handoff.cluster.PodJson.PODS;
import static io.handoff.cluster.PodJson.bookmark;
import static io.handoff.cluster.PodJson.event;
import static io.handoff.cluster.PodJson.gone;
import static io.handoff.cluster.PodJson.ip;
import static io.handoff.cluster.PodJson.list;
import static io.handoff.cluster.PodJson.pod;
import static io.handoff.cluster.PodJson.stream;
import static io.handoff.cluster.PodJson.watch;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Kubernetes discovery against fabric8's Kubernetes API mock server. Its CRUD mode serves watches over WebSocket only,
 * so the API is scripted with expectations: lists, and watches answered with a body of newline-delimited events that
 * ends, as the API server's watches end. (The mock's chunked answers are not used: on its Vert.x server they arrive
 * with the chunk framing inside the body.)
 */
class KubernetesMembershipTest
{
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @TempDir
    Path temp;

    private KubernetesMockServer server;
    private KubernetesMembership membership;
    private Path token;

    @BeforeEach
    void startServer()
            throws IOException
    {
        server = new KubernetesMockServer(false);
        server.init();
        token = Files.writeString(temp.resolve("token"), "token-1\n");
    }

    @AfterEach
    void stop()
    {
        if (membership != null) {
            membership.close();
        }
        server.destroy();
    }

    @Test
    void readyPodsOfPrefillAndDecodeAreMembersAndFollowTheWatch()
            throws Exception
    {
        Pod waiting = pod("prefill-a", "prefill", false, 0, "3").build();
        Pod decode = pod("decode-b", "decode", true, 0, "4").editMetadata()
                .addToAnnotations(Map.of("handoff.io/compatibility", "sha256:abc", "handoff.io/capacity", "4096")).endMetadata().build();
        Pod router = pod("router-r", "router", true, 0, "5").build();
        Pod noPort = pod("prefill-m", "prefill", true, 0, "6").editSpec().editFirstContainer().withPorts(List.of()).endContainer().endSpec().build();
        Pod noIp = pod("decode-n", "decode", true, 0, "7").editStatus().withPodIP(null).endStatus().build();
        server.expect().get().withPath(PODS).andReturn(200, list("10", waiting, decode, router, noPort, noIp)).once();
        server.expect().get().withPath(watch("10")).andReturn(200, stream(
                event("MODIFIED", pod("prefill-a", "prefill", true, 0, "11").build()),
                event("MODIFIED", pod("decode-b", "decode", false, 0, "12").build()),
                event("MODIFIED", pod("decode-b", "decode", true, 1, "13").build()),
                event("MODIFIED", pod("prefill-a", "prefill", true, 0, "14").editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata().build()),
                event("DELETED", pod("prefill-a", "prefill", false, 0, "15").build()),
                event("MODIFIED", pod("prefill-m", "prefill", true, 0, "16").editSpec().editFirstContainer().withPorts(List.of()).endContainer().endSpec().build()),
                event("MODIFIED", pod("router-r", "router", true, 1, "17").build()),
                bookmark("20"))).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("20")).andReturn(200, stream(bookmark("20"))).always();
        Views views = new Views();

        membership = start(views);

        Member decodeFirst = new Member("decode-b", MemberRole.DECODE, "", URI.create("http://" + ip("decode-b") + ":30000"), "sha256:abc",
                4096, false);
        Member decodeRestarted = new Member("decode-b", MemberRole.DECODE, "", URI.create("http://" + ip("decode-b") + ":30000"), "", 0, false);
        Member prefill = new Member("prefill-a", MemberRole.PREFILL, "", URI.create("http://" + ip("prefill-a") + ":30000"), "", 0, false);
        assertThat(views.all().getFirst()).isEqualTo(MembershipView.of(List.of(decodeFirst)));
        awaitRequest(watch("20"));
        assertThat(views.all()).containsExactly(
                MembershipView.of(List.of(decodeFirst)),
                MembershipView.of(List.of(decodeFirst, prefill)),
                MembershipView.of(List.of(prefill)),
                MembershipView.of(List.of(decodeRestarted, prefill)),
                MembershipView.of(List.of(decodeRestarted, prefill.asDraining())),
                MembershipView.of(List.of(decodeRestarted)));
        assertThat(membership.current()).isEqualTo(MembershipView.of(List.of(decodeRestarted)));
    }

    @Test
    void aPodWhoseServerReportsAnotherRoleIsListedWithThatRoleUntilThePodGoes()
            throws Exception
    {
        server.expect().get().withPath(PODS).andReturn(200, list("10", pod("prefill-a", "prefill", true, 0, "9").build())).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("10")).andReturn(200, stream(bookmark("10"))).always();
        Views views = new Views();
        membership = start(views);
        Member prefill = new Member("prefill-a", MemberRole.PREFILL, "", URI.create("http://" + ip("prefill-a") + ":30000"), "", 0, false);
        assertThat(membership.current()).isEqualTo(MembershipView.of(List.of(prefill)));

        // POST /admin/role switched it: its label still says prefill
        assertThat(membership.roleReported("prefill-a", MemberRole.DECODE)).isTrue();
        Member switched = new Member("prefill-a", MemberRole.DECODE, "", prefill.http(), "", 0, false);
        assertThat(membership.current()).isEqualTo(MembershipView.of(List.of(switched)));
        assertThat(views.all().getLast()).isEqualTo(MembershipView.of(List.of(switched)));
        assertThat(membership.roleReported("prefill-a", MemberRole.DECODE)).as("already so").isFalse();
        assertThat(membership.roleReported("nobody", MemberRole.DECODE)).isFalse();
    }

    @Test
    void everyCallCarriesTheServiceAccountTokenReadAfreshWhenItRotates()
            throws Exception
    {
        server.expect().get().withPath(PODS).andReturn(200, list("10")).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("10")).andReturn(200, stream(bookmark("10"))).always();

        membership = start(new Views());
        assertThat(server.takeRequest(20, TimeUnit.SECONDS).getHeader("Authorization")).isEqualTo("Bearer token-1");
        Files.writeString(token, "token-2\n");

        assertThat(awaitRequest(request -> "Bearer token-2".equals(request.getHeader("Authorization")))).isNotNull();
    }

    @Test
    void aGoneResourceVersionListsThePodsAgain()
            throws Exception
    {
        server.expect().get().withPath(PODS).andReturn(200, list("10", pod("decode-b", "decode", true, 0, "9").build())).once();
        server.expect().get().withPath(watch("10")).andReturn(410, "{\"kind\":\"Status\",\"code\":410}").once();
        server.expect().get().withPath(PODS).andReturn(200, list("20", pod("decode-b", "decode", true, 0, "9").build(),
                pod("prefill-c", "prefill", true, 0, "19").build())).once();
        server.expect().get().withPath(watch("20")).andReturn(200, stream(gone())).once();
        server.expect().get().withPath(PODS).andReturn(200, list("30", pod("prefill-c", "prefill", true, 0, "19").build())).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("30")).andReturn(200, stream(bookmark("30"))).always();
        Views views = new Views();

        membership = start(views);

        awaitRequest(watch("30"));
        assertThat(views.all()).as(views.all().toString()).extracting(view -> view.members().stream().map(Member::id).toList()).containsExactly(
                List.of("decode-b"), List.of("decode-b", "prefill-c"), List.of("prefill-c"));
        assertThat(views.all()).allMatch(view -> view.stale().isEmpty());
    }

    @Test
    void anApiOutageKeepsTheLastMembersStaleUntilAFreshListReplacesThem()
            throws Exception
    {
        server.expect().get().withPath(PODS).andReturn(200, list("10", pod("decode-b", "decode", true, 0, "9").build())).once();
        server.expect().get().withPath(watch("10")).andReturn(503, "{\"kind\":\"Status\",\"code\":503}").once();
        server.expect().get().withPath(PODS).andReturn(503, "{\"kind\":\"Status\",\"code\":503}").once();
        server.expect().get().withPath(PODS).andReturn(200, list("40", pod("decode-b", "decode", true, 0, "9").build(),
                pod("prefill-c", "prefill", true, 0, "39").build())).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("40")).andReturn(200, stream(bookmark("40"))).always();
        Views views = new Views();

        membership = start(views);

        views.await(all -> all.size() >= 3);
        List<MembershipView> seen = views.all();
        assertThat(seen).hasSize(3);
        assertThat(seen.get(0).stale()).isEmpty();
        assertThat(seen.get(1).members()).isEqualTo(seen.get(0).members());
        assertThat(seen.get(1).stale()).hasValueSatisfying(reason -> assertThat(reason).contains("503"));
        assertThat(seen.get(2).stale()).isEmpty();
        assertThat(seen.get(2).members()).extracting(Member::id).containsExactly("decode-b", "prefill-c");
    }

    @Test
    void aMalformedWatchLineIsAnOutageNotACrash()
            throws Exception
    {
        server.expect().get().withPath(PODS).andReturn(200, list("10", pod("decode-b", "decode", true, 0, "9").build())).once();
        server.expect().get().withPath(watch("10")).andReturn(200, stream("{\"type\":\"MODIFIED\",\"object\":{\"metadata\":\n")).once();
        server.expect().get().withPath(PODS).andReturn(200, list("50")).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("50")).andReturn(200, stream(bookmark("50"))).always();
        Views views = new Views();

        membership = start(views);

        views.await(all -> all.size() >= 3);
        assertThat(views.all().get(1).stale()).hasValueSatisfying(reason -> assertThat(reason).contains("watch event"));
        assertThat(views.all().get(2)).isEqualTo(MembershipView.of(List.of()));
    }

    @Test
    void anOversizedWatchEventIsRefusedBeforeItIsParsed()
            throws Exception
    {
        Pod huge = pod("decode-b", "decode", true, 0, "11").editMetadata().addToAnnotations("bulk", "x".repeat(KubernetesApi.MAX_EVENT_BYTES)).endMetadata()
                .build();
        server.expect().get().withPath(PODS).andReturn(200, list("10", pod("decode-b", "decode", true, 0, "9").build())).once();
        server.expect().get().withPath(watch("10")).andReturn(200, stream(event("MODIFIED", huge))).once();
        server.expect().get().withPath(PODS).andReturn(200, list("60", pod("decode-b", "decode", true, 0, "9").build())).once();
        server.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("60")).andReturn(200, stream(bookmark("60"))).always();
        Views views = new Views();

        membership = start(views);

        views.await(all -> all.size() >= 3);
        assertThat(views.all().get(1).stale()).hasValueSatisfying(reason -> assertThat(reason).contains("longer than " + KubernetesApi.MAX_EVENT_BYTES));
        assertThat(views.all().get(2)).isEqualTo(views.all().get(0));
    }

    @Test
    void startFailsWhenTheApiCannotBeReached()
            throws Exception
    {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        membership = new KubernetesMembership(config("http://127.0.0.1:" + closedPort, ""), Map.of(), temp.resolve("no-service-account"));

        assertThatThrownBy(() -> membership.start(view -> {})).isInstanceOf(IOException.class)
                .hasMessageContaining("cannot list the pods of http://127.0.0.1:" + closedPort);
    }

    @Test
    void followsTheApiOverTlsTrustingOnlyTheConfiguredCa()
            throws Exception
    {
        KubernetesMockServer tls = new KubernetesMockServer(true);
        tls.init();
        try {
            tls.expect().get().withPath(PODS).andReturn(200, list("10", pod("decode-b", "decode", true, 0, "9").build())).always();
            tls.expect().get().delay(100, TimeUnit.MILLISECONDS).withPath(watch("10")).andReturn(200, stream(bookmark("10"))).always();
            String url = "https://localhost:" + tls.getPort();
            KubernetesMembership untrusting = new KubernetesMembership(config(url, ""), Map.of(), temp.resolve("no-service-account"));
            assertThatThrownBy(() -> untrusting.start(view -> {})).isInstanceOf(IOException.class);
            untrusting.close();

            Views views = new Views();
            membership = new KubernetesMembership(config(url, tls.getSelfSignedCertificate().certificatePath()), Map.of(), temp.resolve("none"));
            membership.start(views);

            assertThat(views.all().getFirst().members()).extracting(Member::id).containsExactly("decode-b");
        }
        finally {
            if (membership != null) {
                membership.close();
                membership = null;
            }
            tls.destroy();
        }
    }

    @Test
    void apiServerAndNamespaceComeFromThePodWhenNotConfigured()
            throws Exception
    {
        Path serviceAccount = Files.createDirectories(temp.resolve("sa"));
        Files.writeString(serviceAccount.resolve("namespace"), "serving\n");

        assertThat(KubernetesApi.server("", Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443")))
                .isEqualTo(URI.create("https://10.96.0.1:443"));
        assertThat(KubernetesApi.server("", Map.of("KUBERNETES_SERVICE_HOST", "fd00::1", "KUBERNETES_SERVICE_PORT", "443")))
                .isEqualTo(URI.create("https://[fd00::1]:443"));
        assertThat(KubernetesApi.namespace("", serviceAccount)).isEqualTo("serving");
        assertThatThrownBy(() -> KubernetesApi.server("", Map.of())).isInstanceOf(IOException.class).hasMessageContaining("api-server");
        assertThatThrownBy(() -> KubernetesApi.namespace("", temp)).isInstanceOf(IOException.class).hasMessageContaining("set namespace");
        assertThatThrownBy(() -> KubernetesApi.namespace("../etc", temp)).isInstanceOf(IOException.class).hasMessageContaining("DNS label");
    }

    private KubernetesMembership start(Consumer<MembershipView> listener)
            throws Exception
    {
        KubernetesMembership started = new KubernetesMembership(config(server.url("/").replaceAll("/$", ""), ""), Map.of(), temp.resolve("no-service-account"));
        started.start(listener);
        return started;
    }

    private ClusterConfig.Kubernetes config(String apiServer, String caFile)
    {
        return new ClusterConfig.Kubernetes(apiServer, PodJson.NAMESPACE, "app.kubernetes.io/part-of=handoff", "handoff.io/role", "http",
                token.toString(), caFile, Duration.ofMillis(100));
    }

    private RecordedRequest awaitRequest(String path)
            throws InterruptedException
    {
        return awaitRequest(request -> path.equals(request.getPath()));
    }

    private RecordedRequest awaitRequest(Predicate<RecordedRequest> wanted)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (System.nanoTime() < deadline) {
            RecordedRequest request = server.takeRequest(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (request != null && wanted.test(request)) {
                return request;
            }
        }
        throw new AssertionError("no such request within " + DEADLINE);
    }

    /** Every view handed over, in order. */
    private static final class Views
            implements Consumer<MembershipView>
    {
        private final List<MembershipView> views = new ArrayList<>();

        @Override
        public synchronized void accept(MembershipView view)
        {
            views.add(view);
            notifyAll();
        }

        synchronized List<MembershipView> all()
        {
            return List.copyOf(views);
        }

        synchronized void await(Predicate<List<MembershipView>> condition)
                throws InterruptedException
        {
            long deadline = System.nanoTime() + DEADLINE.toNanos();
            while (!condition.test(views)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("views never met the condition: " + views);
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }
}
