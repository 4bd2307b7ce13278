package io.handoff.plugin.mori;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.ControlledFence;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
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
 * Mori with forward-sync off: it declares neither FORWARD_SYNC nor STAGING, so the core keeps early send off with
 * it, and the core, not mori, waits on each plan's fence before it hands the plan over (the unfixed field backend
 * of seed 000 read at once). The whole contract holds, fence tests included, and what the core's wait is for.
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
        return EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, TransferCapability.HEAD_SLICES);
    }

    /** Seed 000 cannot happen any more: mori gets the plan only once its fence is done, and copies what the forward left. */
    @Test
    void thePagesAreCopiedOnlyOnceTheCoreSawTheFenceDone()
            throws Exception
    {
        try (Link link = open()) {
            ControlledFence fence = new ControlledFence(41);
            TransferPlan plan = plan(ROOM, 0, 0, fence, new int[] {1, 2, 6});
            Outcome outcome = link.post(plan);
            fence.awaitWaiter();

            assertThat(outcome.isDone()).isFalse();
            assertThat(link.events()).isEmpty();
            assertThat(link.destination().mismatches(Map.of())).isEmpty();

            // The forward writes the pages and completes: the decode gets what it wrote.
            for (int page = 1; page < 7; page++) {
                link.source().writePage(page, 1);
            }
            fence.complete();
            assertThat(outcome.await().completed()).isTrue();
            assertThat(link.destination().mismatches(1, pagesOf(plan))).isEmpty();
            assertThat(link.transferLink().violation()).isNull();
        }
    }

    /** Nothing is staged: the copy reads the live source pool, so only the fence wait keeps a forward's writes out of it. */
    @Test
    void aWriteToTheSourceDuringTheCopyTearsIt()
            throws Exception
    {
        try (Link link = open()) {
            // Something writes every page of the plan while the copy is between its first and second page.
            link.hooks().onAfterPage((room, page) -> {
                if (page == 0) {
                    for (int source = 10; source < 14; source++) {
                        link.source().writePage(source, 1);
                    }
                }
            });
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {10, 30, 4});

            assertThat(link.post(plan).await().completed()).isTrue();

            // A torn chunk: its first page from before the write, the rest from after it.
            assertThat(link.destination().holds(30, 10, 0)).isTrue();
            for (int page = 1; page < 4; page++) {
                assertThat(link.destination().holds(30 + page, 10 + page, 1)).isTrue();
            }
        }
    }
}
