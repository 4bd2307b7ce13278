package io.handoff.demo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Supervision of the demo's servers with stand-in children: {@code sh} scripts that print "ready" when they
 * would answer {@code /health}, exit early with an error, never get ready, or ignore SIGTERM.
 */
class ClusterTest
{
    private static final String READY = "echo ready; exec sleep 600";
    private static final String IGNORES_SIGTERM = "trap '' TERM; echo ready; exec sleep 600";
    private static final HealthProbe READY_IN_LOG = node -> node.logTail(50).contains("ready") ? Optional.empty() : Optional.of("not ready yet");
    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path logs;

    private final List<Node> launched = Collections.synchronizedList(new ArrayList<>());

    private NodeLauncher scripts(Map<String, String> scripts)
    {
        return spec -> {
            Node node = ProcessNode.start(spec, List.of("sh", "-c", scripts.get(spec.name())), Map.of(), logs.resolve(spec.name() + ".log"));
            launched.add(node);
            return node;
        };
    }

    private static NodeSpec node(String name, NodeSpec.Role role, int port)
    {
        return new NodeSpec(name, role, port, List.of("serve", "--role", name));
    }

    private static final NodeSpec PREFILL = node("prefill", NodeSpec.Role.PREFILL, 1001);
    private static final NodeSpec DECODE = node("decode", NodeSpec.Role.DECODE, 1002);
    private static final NodeSpec ROUTER = node("router", NodeSpec.Role.ROUTER, 1003);

    @Test
    void aServerThatExitsEarlyStopsTheStartAndItsErrorIsQuoted()
    {
        NodeLauncher launcher = scripts(Map.of(
                "prefill", "echo starting; echo \"handoff serve: transfer backend 'mori' lacks FORWARD_SYNC and STAGING\" >&2; exit 1",
                "decode", READY));
        assertThatThrownBy(() -> Cluster.start(List.of(List.of(PREFILL, DECODE)), launcher, READY_IN_LOG, LONG, LONG, line -> {}))
                .isInstanceOf(StartupFailure.class)
                .hasMessageStartingWith("prefill exited with code 1 before it became healthy; the last lines of " + logs.resolve("prefill.log") + ":")
                .hasMessageContaining("  | starting\n  | handoff serve: transfer backend 'mori' lacks FORWARD_SYNC and STAGING");
        assertThat(launched).hasSize(2).allSatisfy(node -> assertThat(node.ended()).isPresent());
    }

    @Test
    void aServerThatNeverBecomesHealthyFailsWithinTheTimeoutAndIsStopped()
    {
        NodeLauncher launcher = scripts(Map.of("prefill", "echo loading weights; exec sleep 600"));
        // The timeout is long enough for the script to have written its first line on a loaded machine.
        assertThatThrownBy(() -> Cluster.start(List.of(List.of(PREFILL)), launcher, READY_IN_LOG, Duration.ofSeconds(3), LONG, line -> {}))
                .isInstanceOf(StartupFailure.class)
                .hasMessageStartingWith("prefill did not become healthy within 3000 ms (last probe: not ready yet)")
                .hasMessageContaining("  | loading weights");
        assertThat(launched.getFirst().ended()).contains("exited with code 143 (signal 15)");
    }

    @Test
    void closeSendsSigtermAndKillsWhatIgnoresIt()
            throws Exception
    {
        NodeLauncher launcher = scripts(Map.of("prefill", READY, "decode", IGNORES_SIGTERM, "router", READY));
        List<String> progress = new ArrayList<>();
        // The stop grace is what the two that obey SIGTERM need to exit on a loaded machine; the one that ignores it waits it out.
        try (Cluster cluster = Cluster.start(List.of(List.of(PREFILL, DECODE), List.of(ROUTER)), launcher, READY_IN_LOG, LONG,
                Duration.ofSeconds(2), progress::add)) {
            assertThat(cluster.nodes()).extracting(node -> node.spec().name()).containsExactly("prefill", "decode", "router");
            assertThat(cluster.nodes(NodeSpec.Role.DECODE)).extracting(node -> node.spec().name()).containsExactly("decode");
            assertThat(cluster.nodes()).allSatisfy(node -> assertThat(node.ended()).isEmpty());
        }
        assertThat(launched.get(0).ended()).contains("exited with code 143 (signal 15)");
        assertThat(launched.get(1).ended()).contains("exited with code 137 (signal 9)");
        assertThat(launched.get(2).ended()).contains("exited with code 143 (signal 15)");
        assertThat(progress).anyMatch(line -> line.startsWith("starting router on http://127.0.0.1:1003: handoff serve --role router"))
                .anyMatch(line -> line.startsWith("decode is healthy after "));
    }

    @Test
    void aRouterThatFailsStopsThePrefillsAndDecodesStartedBeforeIt()
    {
        NodeLauncher launcher = scripts(Map.of("prefill", READY, "decode", READY, "router", "echo 'router: unknown option --prefill' >&2; exit 2"));
        assertThatThrownBy(() -> Cluster.start(List.of(List.of(PREFILL, DECODE), List.of(ROUTER)), launcher, READY_IN_LOG, LONG, LONG, line -> {}))
                .hasMessageStartingWith("router exited with code 2 before it became healthy")
                .hasMessageContaining("router: unknown option --prefill");
        assertThat(launched).hasSize(3).allSatisfy(node -> assertThat(node.ended()).isPresent());
    }

    @Test
    void aLauncherThatCannotStartTheCommandSaysWhich()
    {
        NodeLauncher launcher = spec -> ProcessNode.start(spec, List.of(logs.resolve("no-such-launcher").toString()), Map.of(),
                logs.resolve(spec.name() + ".log"));
        assertThatThrownBy(() -> Cluster.start(List.of(List.of(PREFILL)), launcher, READY_IN_LOG, LONG, LONG, line -> {}))
                .isInstanceOf(StartupFailure.class)
                .hasMessageContaining("cannot start prefill (" + logs.resolve("no-such-launcher"));
    }

    @Test
    void aServerWhoseChosenPortAnotherProgramTookIsStartedAgainOnOtherPorts()
            throws Exception
    {
        // the first start's prefill finds its port taken (exit 3, as handoff serve does), the second's binds
        List<Integer> tried = Collections.synchronizedList(new ArrayList<>());
        NodeLauncher launcher = spec -> {
            tried.add(spec.port());
            Node node = ProcessNode.start(spec, List.of("sh", "-c", tried.size() == 1 ? "echo 'cannot listen' >&2; exit 3" : READY), Map.of(),
                    logs.resolve(spec.name() + tried.size() + ".log"));
            launched.add(node);
            return node;
        };
        List<String> progress = new ArrayList<>();
        try (Cluster cluster = FreePorts.retrying(1, progress::add, ports -> Cluster.start(List.of(List.of(node("prefill", NodeSpec.Role.PREFILL,
                ports.getFirst()))), launcher, READY_IN_LOG, LONG, LONG, line -> {}))) {
            assertThat(tried).hasSize(2).doesNotHaveDuplicates();
            assertThat(cluster.nodes()).extracting(node -> node.spec().port()).containsExactly(tried.get(1));
            assertThat(progress).containsExactly("port " + tried.getFirst() + " was taken by another program after it was chosen; starting the "
                    + "servers again on other ports");
        }
    }

    @Test
    void aTakenPortThatWasNotChosenFreeOrOneTakenEveryTimeFailsTheStart()
    {
        NodeLauncher taken = scripts(Map.of("router", "exit 3", "prefill", "exit 3"));
        List<String> progress = new ArrayList<>();
        // the router's port is the user's: other ports for the servers would not free it
        assertThatThrownBy(() -> FreePorts.retrying(1, progress::add, ports -> Cluster.start(List.of(List.of(ROUTER)), taken, READY_IN_LOG, LONG,
                LONG, line -> {})))
                .isInstanceOf(StartupFailure.class)
                .hasMessageStartingWith("router exited with code 3 before it became healthy");
        assertThat(progress).isEmpty();
        assertThatThrownBy(() -> FreePorts.retrying(1, progress::add, ports -> Cluster.start(List.of(List.of(node("prefill", NodeSpec.Role.PREFILL,
                ports.getFirst()))), taken, READY_IN_LOG, LONG, LONG, line -> {})))
                .isInstanceOf(StartupFailure.class)
                .hasMessageStartingWith("prefill exited with code 3 before it became healthy");
        assertThat(progress).hasSize(FreePorts.ATTEMPTS - 1);
    }

    @Test
    void anInProcessServerThatReturnsIsAFailureWithItsExitCode()
    {
        NodeLauncher launcher = ThreadNode.launcher(args -> args[2].equals("prefill") ? 1 : 0);
        assertThatThrownBy(() -> Cluster.start(List.of(List.of(PREFILL)), launcher, node -> Optional.of("refused"), LONG, LONG, line -> {}))
                .hasMessage("prefill returned exit code 1 before it became healthy; its output: this process's stderr (in-process)");
    }

    @Test
    void inProcessServersRunUntilTheJvmExits()
            throws Exception
    {
        CountDownLatch forever = new CountDownLatch(1);
        List<List<String>> started = Collections.synchronizedList(new ArrayList<>());
        NodeLauncher launcher = ThreadNode.launcher(args -> {
            started.add(List.of(args));
            try {
                forever.await();
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return 0;
        });
        HealthProbe running = node -> started.contains(node.spec().arguments()) ? Optional.empty() : Optional.of("not running yet");
        try (Cluster cluster = Cluster.start(List.of(List.of(PREFILL, DECODE)), launcher, running, LONG, LONG, line -> {})) {
            assertThat(cluster.nodes()).allSatisfy(node -> assertThat(node.ended()).isEmpty());
        }
        assertThat(started).containsExactlyInAnyOrder(PREFILL.arguments(), DECODE.arguments());
        forever.countDown();
    }
}
