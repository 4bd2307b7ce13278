package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.trace.FailureCause;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static io.handoff.core.scheduler.SchedulerFixture.await;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every path that ends a request for a reason names its {@link FailureCause}: in the result, in what the handoff
 * hears when the request finishes, and in the scheduler's failure counts. And a quarantined page is unavailable to
 * admission until its proof arrives, however long that takes; the quarantine's length is recorded once.
 */
class SchedulerFailureCauseTest
{
    private static final int PAGE = 16;

    /** A decode's handoff without a peer: requests named "remote-…" receive their prompt; their pages wait for a proof. */
    private static final class DecodeWithoutPeer
            implements KvHandoff
    {
        final Map<String, CompletableFuture<int[]>> admitted = new ConcurrentHashMap<>();
        final Map<String, Optional<FailureCause>> finishedWith = new ConcurrentHashMap<>();
        final Map<String, CompletableFuture<ReleaseProof>> proofs = new ConcurrentHashMap<>();

        CompletableFuture<int[]> admitted(String rid)
        {
            return admitted.computeIfAbsent(rid, r -> new CompletableFuture<>());
        }

        CompletableFuture<ReleaseProof> proof(String rid)
        {
            return proofs.computeIfAbsent(rid, r -> new CompletableFuture<>());
        }

        @Override
        public boolean receivesPrompt(HandoffRequest request)
        {
            return request.rid().startsWith("remote");
        }

        @Override
        public void admitted(HandoffRequest request)
        {
            admitted(request.rid()).complete(request.pages());
        }

        @Override
        public Release finished(HandoffRequest request, FinishReason reason, String error, Optional<FailureCause> cause)
        {
            finishedWith.put(request.rid(), cause);
            return receivesPrompt(request) ? new Quarantine(proof(request.rid())) : Release.NOW;
        }
    }

    private static int[] admittedPages(DecodeWithoutPeer handoff, String rid)
            throws Exception
    {
        return handoff.admitted(rid).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void aFailedTransferFailsTheRequestWithItsCauseAndAQuarantineKeepsItsPagesFromAdmissionUntilTheProof()
            throws Exception
    {
        DecodeWithoutPeer handoff = new DecodeWithoutPeer();
        // 6 pages: the remote request reserves 5 (a 64-token prompt in 4, and room to decode); 4 get quarantined
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(6).handoff(handoff).build()) {
            RequestHandle remote = fixture.submit(greedy("remote-a", prompt(64, 1), 4));
            int[] remotePages = admittedPages(handoff, "remote-a");
            fixture.scheduler.promptKvFailed("remote-a", FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page 2");

            GenerateResult failed = await(remote);
            assertThat(failed.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(failed.cause()).contains(FailureCause.CHECKSUM_MISMATCH);
            assertThat(failed.error()).contains("KV checksum mismatch on room page 2");
            assertThat(handoff.finishedWith).containsEntry("remote-a", Optional.of(FailureCause.CHECKSUM_MISMATCH));
            SchedulerStats stats = fixture.scheduler.stats();
            assertThat(stats.pages().quarantined()).isEqualTo(4);
            assertThat(stats.failures(FailureCause.CHECKSUM_MISMATCH)).isEqualTo(1);
            assertThat(stats.failures().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(1);

            // 3 pages needed, 2 free: it waits, however many turns the scheduler takes, and never gets a quarantined page
            RequestHandle local = fixture.submit(greedy("local-b", prompt(40, 2), 8));
            fixture.scheduler.checkInvariants();
            fixture.scheduler.checkInvariants();
            assertThat(local.result()).isNotDone();
            assertThat(handoff.admitted("local-b")).isNotDone();
            assertThat(fixture.scheduler.stats().waiting()).isEqualTo(1);
            assertThat(fixture.scheduler.stats().quarantine().count()).isZero();

            handoff.proof("remote-a").complete(new ReleaseProof.PeerFenced("prefill-1", "process exited"));
            GenerateResult served = await(local);
            assertThat(served.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(served.cause()).isEmpty();
            assertThat(admittedPages(handoff, "local-b")).containsAnyOf(java.util.Arrays.copyOf(remotePages, 4));
            stats = fixture.scheduler.stats();
            assertThat(stats.pages().quarantined()).isZero();
            assertThat(stats.quarantine().count()).isEqualTo(1);
            assertThat(stats.quarantine().longestNanos()).isPositive();
            assertThat(stats.quarantine().cumulativeCounts()).endsWith(1L);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void aClientAbortAndAnAbortTheEngineNamesCarryTheirCauses()
            throws Exception
    {
        DecodeWithoutPeer handoff = new DecodeWithoutPeer();
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(32).handoff(handoff).build()) {
            RequestHandle byClient = fixture.submit(greedy("remote-client", prompt(20, 3), 4));
            RequestHandle byEngine = fixture.submit(greedy("remote-engine", prompt(20, 4), 4));
            admittedPages(handoff, "remote-client");
            admittedPages(handoff, "remote-engine");

            fixture.scheduler.abort("remote-client");
            fixture.scheduler.abort("remote-engine", FailureCause.PEER_LOST, "lost the prefill: no frame for 10 s");

            GenerateResult client = await(byClient);
            assertThat(client.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(client.cause()).contains(FailureCause.CLIENT_ABORT);
            GenerateResult engine = await(byEngine);
            assertThat(engine.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(engine.cause()).contains(FailureCause.PEER_LOST);
            assertThat(engine.error()).contains("lost the prefill: no frame for 10 s");
            assertThat(handoff.finishedWith).containsEntry("remote-client", Optional.of(FailureCause.CLIENT_ABORT))
                    .containsEntry("remote-engine", Optional.of(FailureCause.PEER_LOST));
            assertThat(fixture.scheduler.stats().failures(FailureCause.CLIENT_ABORT)).isEqualTo(1);
            assertThat(fixture.scheduler.stats().failures(FailureCause.PEER_LOST)).isEqualTo(1);

            handoff.proofs.values().forEach(proof -> proof.complete(new ReleaseProof.DrainAck(1, 0, 0)));
            fixture.scheduler.checkInvariants();
            assertThat(fixture.scheduler.stats().quarantine().count()).isEqualTo(2);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void aFailedForwardStepFailsItsRequestAsAnEngineFailureAndAFinishedOneHasNoCause()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(PAGE).pages(32).build()) {
            fixture.faults.fail(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(0), 1);
            GenerateResult failed = fixture.run(greedy("broken", prompt(20, 5), 4));
            assertThat(failed.finishReason()).isEqualTo(FinishReason.ERROR);
            assertThat(failed.cause()).contains(FailureCause.ENGINE);

            GenerateResult fine = fixture.run(greedy("fine", prompt(20, 6), 4));
            assertThat(fine.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(fine.cause()).isEmpty();
            assertThat(fixture.scheduler.stats().failures(FailureCause.ENGINE)).isEqualTo(1);
            fixture.assertIdleAndAccountedFor();
        }
    }
}
