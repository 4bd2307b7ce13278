package io.handoff.plugin.mori;

import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.ControlledFence;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Pool;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Mori with forward-sync off, the unfixed field backend of seed 000: the contract without the fence (it declares
 * neither FORWARD_SYNC nor STAGING, so the core never early-sends with it), and proof of why the core must not.
 */
class NoForwardSyncTransferTest
        extends SharedMemoryTransferTest
{
    @Override
    protected Map<String, String> settings()
    {
        return Map.of("forward-sync", "false");
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK);
    }

    /** The field bug of seed 000: the copy does not wait for the forward, which is why the core must not early-send here. */
    @Test
    void thePagesAreCopiedWhileTheFenceIsStillPending()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(41);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(fence.isDone()).isFalse();
            assertThat(fence.wasAwaited()).isFalse();

            // The forward then writes the pages and completes: the decode keeps what was there before it.
            for (int page = 1; page < 7; page++) {
                link.source().writePage(page, 1);
            }
            fence.complete();
            assertThat(link.destination().mismatches(0, pagesOf(plan))).isEmpty();
            assertThat(link.destination().mismatches(1, pagesOf(plan))).hasSize(6 * Pool.STRIDES.length);
        }
    }

    @Test
    void aForwardStillWritingTearsTheCopy()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(42);
            // The forward writes every page of the plan while the copy is between its first and second page.
            link.senderContext().onAfterPage((room, page) -> {
                if (page == 0) {
                    for (int source = 10; source < 14; source++) {
                        link.source().writePage(source, 1);
                    }
                }
            });
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {10, 30, 4});

            assertThat(link.post(plan).await().completed()).isTrue();
            fence.complete();

            // A torn chunk: its first page from before the forward, the rest from after it.
            assertThat(link.destination().holds(30, 10, 0)).isTrue();
            for (int page = 1; page < 4; page++) {
                assertThat(link.destination().holds(30 + page, 10 + page, 1)).isTrue();
            }
        }
    }
}
