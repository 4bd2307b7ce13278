package io.handoff.dist;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.handoff.dist.InProcessPd.PATIENCE;
import static io.handoff.dist.InProcessPd.PROMPT;
import static io.handoff.dist.InProcessPd.await;
import static io.handoff.dist.InProcessPd.awaitTrue;
import static io.handoff.dist.InProcessPd.colocated;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The field report of seed 003, per one-sided backend, in order and not by timing: request A's write is parked by a
 * fault plan on prefill P1; the decode aborts A; request B (of another prompt, prefilled by P2) arrives needing A's
 * pages; every room deadline and the drain deadline pass; only then is A's write let go. The decode has room for one
 * request, so B can only ever get A's pages. With the release rule (I2) B waits for A's drain and is bit-identical to
 * its colocated reference. With a test-only hook that releases on the drain deadline, as the field's timer-based
 * fixes do, B gets A's pages, A's late write lands in them, and B diverges with no error: the test detects what the
 * rule guards against.
 */
class StalledWriteReleaseIT
{
    private static final long ROOM_A = 71;
    private static final long ROOM_B = 72;
    private static final int[] PROMPT_B = new SplittableRandom(43).ints(256, 0, 256).toArray();
    private static final Duration DRAIN_DEADLINE = Duration.ofSeconds(6);

    @ParameterizedTest(name = "{0} {2}")
    @CsvSource({"mooncake, handoff.plugins.mooncake.transport, shm", "mori, handoff.plugins.mori.forward-sync, true",
            "nixl, handoff.plugins.nixl.tls, 'posix,self'"})
    void aStalledWriteOutlivingEveryDeadlineNeverLandsInTheNextRequestsPages(String backend, String key, String value)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        int[] reference = colocated(PROMPT_B);
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate stalled = faults.park(FaultPoint.TRANSFER_BEFORE_CHUNK, Match.is(ROOM_A), Match.is(0));
        try (InProcessPd pd = new InProcessPd(settings(backend, key, value), List.of(Map.of("handoff.kv.pool-pages", "20")), faults,
                Disaggregation.Options.DEFAULT);
                Prefill p2 = new Prefill(patient(settings(backend, key, value)), Disaggregation.Options.DEFAULT)) {
            ComputeEngine decode = pd.decode(0);
            RequestHandle a = startAAndAbortIt(pd, stalled);

            RequestHandle b = pd.startDecode(ROOM_B, 0, PROMPT_B, TokenListener.NONE, p2.control());
            awaitTrue("the decode marks P1 suspect once the drain deadline passed",
                    () -> !decode.disaggregation().orElseThrow().suspectPeers().isEmpty());
            // every deadline has passed; A's write may still land: B waits, and A's pages stay quarantined
            SchedulerStats held = decode.scheduler().stats();
            assertThat(held.pages().quarantined()).isEqualTo(16);
            assertThat(held.waiting()).isEqualTo(1);
            assertThat(b.result()).isNotDone();

            stalled.release();
            awaitTrue("A's pages come back once P1 drained", () -> decode.scheduler().stats().pages().quarantined() == 0);
            InProcessPd.startPrefill(p2.compute, ROOM_B, PROMPT_B);
            GenerateResult served = await(b);

            assertThat(served.error()).isEmpty();
            assertThat(served.outputIds()).isEqualTo(reference);
            SchedulerStats after = decode.scheduler().stats();
            assertThat(after.quarantine().longestNanos()).as("held past the drain deadline, until the proof").isGreaterThan(DRAIN_DEADLINE.toNanos());
            assertThat(after.failures(FailureCause.CLIENT_ABORT)).isEqualTo(1);
            assertThat(await(a).finishReason()).isEqualTo(FinishReason.ABORT);
        }
    }

    @ParameterizedTest(name = "{0} {2}")
    @CsvSource({"mooncake, handoff.plugins.mooncake.transport, shm", "mori, handoff.plugins.mori.forward-sync, true",
            "nixl, handoff.plugins.nixl.tls, 'posix,self'"})
    void releasingOnTheDrainDeadlineInsteadLetsTheStalledWriteCorruptTheNextRequestSilently(String backend, String key, String value)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        int[] reference = colocated(PROMPT_B);
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate stalled = faults.park(FaultPoint.TRANSFER_BEFORE_CHUNK, Match.is(ROOM_A), Match.is(0));
        Disaggregation.Options releaseOnTimer = new Disaggregation.Options(false, true);
        try (InProcessPd pd = new InProcessPd(settings(backend, key, value), List.of(Map.of("handoff.kv.pool-pages", "20")), faults,
                releaseOnTimer);
                Prefill p2 = new Prefill(patient(settings(backend, key, value)), Disaggregation.Options.DEFAULT)) {
            ComputeEngine decode = pd.decode(0);
            startAAndAbortIt(pd, stalled);

            // B's first token is held in its listener (the decode's scheduler thread), after its KV was committed
            CountDownLatch firstToken = new CountDownLatch(1);
            CountDownLatch goOn = new CountDownLatch(1);
            RequestHandle b = pd.startDecode(ROOM_B, 0, PROMPT_B, (index, token) -> {
                if (index == 0) {
                    firstToken.countDown();
                    awaitLatch(goOn);
                }
            }, p2.control());
            awaitTrue("the hook released A's pages on the drain deadline", () -> decode.scheduler().stats().pages().quarantined() == 0);
            InProcessPd.startPrefill(p2.compute, ROOM_B, PROMPT_B);
            assertThat(firstToken.await(PATIENCE.toSeconds(), TimeUnit.SECONDS)).isTrue();

            long reported = pd.prefillDisaggregation().stats().plansCompleted() + pd.prefillDisaggregation().stats().plansFailed();
            stalled.release();
            awaitTrue("A's late write was reported", () -> pd.prefillDisaggregation().stats().plansCompleted()
                    + pd.prefillDisaggregation().stats().plansFailed() > reported);
            goOn.countDown();
            GenerateResult corrupted = await(b);

            assertThat(corrupted.error()).as("nothing surfaces to the client").isEmpty();
            assertThat(corrupted.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(corrupted.outputIds()).as("B's output after A's write landed in its pages").isNotEqualTo(reference);
        }
    }

    /** A's write parks before its first chunk; the decode aborts A; its 16 prompt pages are quarantined. */
    private static RequestHandle startAAndAbortIt(InProcessPd pd, FaultPlan.Gate stalled)
            throws Exception
    {
        pd.startPrefill(ROOM_A, PROMPT);
        RequestHandle a = pd.startDecode(ROOM_A, 0, PROMPT, TokenListener.NONE);
        stalled.awaitParked(PATIENCE);
        pd.decode(0).scheduler().abort("r" + ROOM_A);
        GenerateResult aborted = await(a);
        assertThat(aborted.finishReason()).isEqualTo(FinishReason.ABORT);
        assertThat(aborted.cause()).contains(FailureCause.CLIENT_ABORT);
        assertThat(pd.decode(0).scheduler().stats().pages().quarantined()).isEqualTo(16);
        return a;
    }

    /** Every room deadline short, the drain deadline the longest of them. */
    private static Map<String, String> settings(String backend, String key, String value)
    {
        Map<String, String> settings = new HashMap<>();
        settings.put("handoff.disaggregation.transfer-backend", backend);
        settings.put(key, value);
        settings.put("handoff.disaggregation.bootstrapping-timeout", "5s");
        settings.put("handoff.disaggregation.waiting-for-input-timeout", "5s");
        settings.put("handoff.disaggregation.transferring-timeout", "5s");
        settings.put("handoff.disaggregation.drain-deadline", DRAIN_DEADLINE.toMillis() + "ms");
        return settings;
    }

    /**
     * B's prefill half goes to P2 only once B can run on the decode, past every deadline of {@link #settings}; a decode's
     * claim waits for its request on a prefill for the bootstrapping deadline, so P2's is the test's patience.
     */
    private static Map<String, String> patient(Map<String, String> settings)
    {
        settings.put("handoff.disaggregation.bootstrapping-timeout", PATIENCE.toSeconds() + "s");
        return settings;
    }

    /** A second prefill in this JVM, without faults. */
    private static final class Prefill
            implements AutoCloseable
    {
        final Engine engine;
        final ComputeEngine compute;

        Prefill(Map<String, String> settings, Disaggregation.Options options)
        {
            Map<String, String> all = InProcessPd.common();
            all.putAll(settings);
            engine = Engine.start(new ConfigSource(Optional.empty(), all, Map.of()));
            compute = ComputeEngine.create(engine, FaultInjector.NONE, Optional.of(Disaggregation.Role.PREFILL), options);
        }

        String control()
        {
            return compute.disaggregation().orElseThrow().controlAddress().orElseThrow();
        }

        @Override
        public void close()
        {
            compute.close();
            engine.close();
        }
    }

    private static void awaitLatch(CountDownLatch latch)
    {
        try {
            latch.await(PATIENCE.toSeconds(), TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
