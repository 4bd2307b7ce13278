package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.TransferBackendContract;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.bytesOf;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The transfer contract with {@code staging = false} over UCX's tcp transport: puts read the registered source pool
 * after the transfer thread waited on the fence itself (FORWARD_SYNC, no STAGING), and each batch is flushed before
 * its pages are reported, so a reported page is in the receiver's pool.
 */
class DirectTransferTest
        extends TransferBackendContract
{
    @Override
    protected TransferBackendProvider provider()
    {
        return new NixlProvider();
    }

    @Override
    protected Map<String, String> settings()
    {
        return Map.of("tls", "tcp", "staging", "false");
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(FORWARD_SYNC, ONE_SIDED, DRAIN_ACK, REMOTE, SAME_HOST, TransferCapability.HEAD_SLICES);
    }

    @Override
    protected String expectedTransport()
    {
        return "ucx:tcp";
    }

    /** A fault in a page's hook comes after its batch landed: those pages are in, nothing after. */
    @Override
    protected void assertStoppedPartWay(Link link, TransferPlan plan, int pagesRead, String reason)
    {
        if (pagesRead == 0) {
            assertThat(reason).contains("stopped before its first page");
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
        }
        else {
            assertThat(reason).contains("stopped at page " + (plan.firstPageIndex() + pagesRead - 1))
                    .contains("pages before " + (plan.firstPageIndex() + plan.pages()) + " landed, nothing after");
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
        }
    }

    @Test
    void aPlanLargerThanABatchIsPutAndFlushedInParts()
            throws Exception
    {
        // A page of all three regions is 2.5KiB, so 6KiB batches hold two pages: five parts for this plan.
        try (Link link = open("staging-buffer", "6KiB")) {
            TransferPlan plan = plan(ROOM, 3, 20, ProducerFence.DONE, new int[] {5, 9, 3}, new int[] {30, 50, 6});
            Outcome outcome = link.post(plan);

            assertThat(outcome.await()).isEqualTo(new Outcome.Result(bytesOf(plan), null));
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
            assertThat(link.events()).containsExactlyElementsOf(hooksThenCompletion(plan));
        }
    }
}
