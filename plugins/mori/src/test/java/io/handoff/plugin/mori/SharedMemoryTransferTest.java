package io.handoff.plugin.mori;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.RecordingHooks;
import io.handoff.testkit.transfer.TransferBackendContract;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.firstPages;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transfer contract over mori's same-host path with its defaults (forward-sync on), and what only mori does:
 * it copies page by page straight into the decode's pool, so a plan stopped part way has landed exactly the pages
 * it read, and says how many.
 */
class SharedMemoryTransferTest
        extends TransferBackendContract
{
    @Override
    protected TransferBackendProvider provider()
    {
        return new MoriProvider();
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, TransferCapability.HEAD_SLICES);
    }

    @Override
    protected String expectedTransport()
    {
        return "shm";
    }

    @Override
    protected void assertStoppedPartWay(Link link, TransferPlan plan, int pagesRead, String reason)
    {
        assertThat(reason).contains(pagesRead + " of " + plan.pages() + " pages");
        assertThat(link.destination().mismatches(firstPages(plan, pagesRead))).isEmpty();
    }

    @Test
    void closingWhileAPlanIsParkedFailsTheQueueAtOnceAndStopsThePlanAtTheNextPage()
            throws Exception
    {
        try (Link link = open()) {
            RecordingHooks.Park park = link.hooks().parkAfterPage(2);
            TransferPlan inFlightPlan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 10, 8});
            Outcome inFlight = link.post(inFlightPlan);
            Outcome queued = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 30, 2}));
            park.awaitParked();

            CompletableFuture<Void> closing = CompletableFuture.runAsync(link::closeLink);
            assertThat(queued.await().failure()).contains("closed before the plan was sent");
            CompletableFuture<Void> drain = link.drain(ROOM);
            assertThat(drain).isNotDone();

            park.release();
            closing.get(30, TimeUnit.SECONDS);
            assertThat(inFlight.await().failure()).contains("closed while sending room 7#1 chunk 0").contains("3 of 8 pages were written");
            assertThat(drain).succeedsWithin(Duration.ofSeconds(30));
            // Pages 0..2 landed before the close was seen; nothing after them did.
            assertThat(link.destination().mismatches(firstPages(inFlightPlan, 3))).isEmpty();
        }
    }
}
