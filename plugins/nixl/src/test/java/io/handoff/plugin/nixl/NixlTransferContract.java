package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.ControlledFence;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.TransferBackendContract;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.spi.transfer.TransferCapability.STAGING;
import static io.handoff.testkit.transfer.Plans.bytesOf;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transfer contract in staging mode ({@code staging = true}) over one choice of UCX transports ({@link #tls()}),
 * two backends in one JVM, and what only staging nixl does: it gathers a plan's pages into its staging buffer when the fence completes, runs the hooks, and only
 * then puts, in parts when the buffer is smaller than the plan.
 */
abstract class NixlTransferContract
        extends TransferBackendContract
{
    /** The UCX transports, as {@code handoff.plugins.nixl.tls}. */
    protected abstract String tls();

    @Override
    protected TransferBackendProvider provider()
    {
        return new NixlProvider();
    }

    @Override
    protected Map<String, String> settings()
    {
        return Map.of("tls", tls(), "staging", "true");
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(STAGING, ONE_SIDED, DRAIN_ACK, REMOTE, SAME_HOST, TransferCapability.HEAD_SLICES);
    }

    @Override
    protected String expectedTransport()
    {
        return "ucx:" + tls();
    }

    /** The hooks run after the gather and before any put of their part: a fault in one leaves the part unsent. */
    @Override
    protected void assertStoppedPartWay(Link link, TransferPlan plan, int pagesRead, String reason)
    {
        if (pagesRead == 0) {
            assertThat(reason).contains("stopped before its first page");
        }
        else {
            assertThat(reason).contains("stopped at page " + (plan.firstPageIndex() + pagesRead - 1))
                    .contains("pages before " + plan.firstPageIndex() + " landed, nothing after");
        }
        assertThat(link.destination().mismatches(Map.of())).isEmpty();
    }

    /**
     * STAGING: the copy is taken when the fence completes, and the puts read the copy. The source holds pattern 0
     * when the plan is posted and pattern 1 when the fence completes; the afterPage hook (after the gather, before
     * any put) overwrites it with pattern 2. Only pattern 1 may land: 0 would mean a snapshot before the fence,
     * 2 a put from the live pool.
     */
    @Test
    void sendsTheSnapshotTakenWhenTheFenceCompletedNotTheSourceBeforeOrAfter()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(9);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6}, new int[] {30, 40, 3});
            Outcome outcome = link.post(plan);
            fence.awaitWaiter();
            link.source().fill(1);
            link.hooks().onAfterPage((room, page) -> {
                if (page == 0) {
                    link.source().fill(2);
                }
            });
            fence.complete();

            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination().mismatches(1, pagesOf(plan))).isEmpty();
            assertThat(link.source().mismatches(2, link.source().everyPage())).as("the hook changed the source before the puts").isEmpty();
        }
    }

    /** 12KiB halves hold four pages of the three regions: batch k+1 is gathered into one half while k's puts read the other. */
    @Test
    void batchesTakeTheBufferHalvesInTurnAndEveryPageLands()
            throws Exception
    {
        try (Link link = open("staging-buffer", "24KiB")) {
            TransferPlan plan = plan(ROOM, 1, 0, ProducerFence.DONE, new int[] {0, 40, 9}, new int[] {20, 3, 1}, new int[] {9, 10, 7});
            Outcome outcome = link.post(plan);

            assertThat(outcome.await()).isEqualTo(new Outcome.Result(bytesOf(plan), null));
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
            assertThat(link.events()).containsExactlyElementsOf(hooksThenCompletion(plan));
        }
    }

    @Test
    void aPlanLargerThanTheStagingBufferIsSentInParts()
            throws Exception
    {
        // A page of all three regions is 2.5KiB, so a 6KiB buffer holds two pages: five parts for this plan.
        try (Link link = open("staging-buffer", "6KiB")) {
            TransferPlan plan = plan(ROOM, 3, 20, ProducerFence.DONE, new int[] {5, 9, 3}, new int[] {30, 50, 6});
            Outcome outcome = link.post(plan);

            assertThat(outcome.await()).isEqualTo(new Outcome.Result(bytesOf(plan), null));
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
            assertThat(link.events()).containsExactlyElementsOf(hooksThenCompletion(plan));
        }
    }
}
