package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A receiver that closed (its worker and registrations gone) while a sender is still connected. Endpoints run
 * without peer error handling, so UCX does not always notice: over tcp the connection breaks and puts fail; over
 * shared memory the puts sit in the receiver's queue and the flush never completes.
 */
class ReceiverGoneTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);

    @TempDir
    Path folder;

    @BeforeAll
    static void ucx()
    {
        Ucx.assumeAvailable();
    }

    @Test
    void overTcpTheNextPlanFailsWithUcxsReasonAndThePeerTakesNoMorePlans()
            throws Exception
    {
        try (Link link = open("tls", "tcp")) {
            TransferPlan landed = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 2});
            assertThat(link.post(landed).await().completed()).isTrue();
            link.receiver().close();

            Outcome.Result failed = link.post(plan(ROOM, 1, 2, ProducerFence.DONE, new int[] {2, 2, 2})).await();
            assertThat(failed.failure()).contains("room 7#1 chunk 1 failed: ").doesNotContain("may still land");
            // The connection broke: nothing of the plan is in flight, so the drain holds.
            assertThat(link.drain(ROOM).get(30, TimeUnit.SECONDS)).isNull();
            assertThat(link.post(plan(ROOM, 2, 4, ProducerFence.DONE, new int[] {4, 4, 1})).await().failure())
                    .contains("is unusable since an earlier plan failed").contains("was not sent");
            assertThat(link.destination().mismatches(0, pagesOf(landed))).isEmpty();
        }
    }

    @Test
    void overSharedMemoryAFlushThatNeverCompletesFailsThePlanAndTakesAwayTheDrainPromise()
            throws Exception
    {
        // Long enough for the first plan's flush on a loaded machine; the failing plan waits it out once.
        try (Link link = open("tls", "posix,self", "flush-timeout", "2s")) {
            assertThat(link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 2})).await().completed()).isTrue();
            link.receiver().close();

            Outcome.Result failed = link.post(plan(ROOM, 1, 2, ProducerFence.DONE, new int[] {2, 2, 2})).await();
            assertThat(failed.failure()).contains("did not complete at the receiver within flush-timeout").contains("may still land");
            assertThatThrownBy(() -> link.drain(ROOM).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasMessageContaining("cannot prove that no write of room 7#1 is in flight");
            assertThat(link.post(plan(ROOM, 2, 4, ProducerFence.DONE, new int[] {4, 4, 1})).await().failure())
                    .contains("is unusable since an earlier plan failed");
            // Closing the link and the sender still finishes: the endpoint's close is bounded by the flush timeout.
            link.closeLink();
            link.sender().close();
            assertThat(link.destination().mismatches(0, Map.of(0, 0, 1, 1))).isEmpty();
        }
    }

    private Link open(String... settings)
    {
        NixlProvider provider = new NixlProvider();
        return Link.acrossHosts(provider, ReferenceSettings.of(provider).with(settings), folder, WriteGuard.ALLOW_ALL);
    }
}
