package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** How a plan is cut into batches that fit a staging slot, and each batch into one put per run and region. */
class PieceBatchesTest
{
    private static final RoomKey ROOM = new RoomKey(3, 0);
    // Two regions: a page is 100 bytes in the first, 50 in the second; 150 bytes a page of both.
    private static final long[] STRIDES = {100, 50};

    /** One batch, as "pages first..end: region src->dst xbytes @staging" per piece. */
    private static List<String> cutAll(TransferPlan plan, long batchBytes)
    {
        PieceBatches batches = new PieceBatches(plan, STRIDES, batchBytes);
        List<String> cut = new ArrayList<>();
        while (batches.hasNext()) {
            batches.next();
            StringBuilder line = new StringBuilder("pages " + batches.firstPage() + ".." + batches.endPage() + " (" + batches.batchBytes() + "):");
            for (int piece = 0; piece < batches.pieces(); piece++) {
                line.append(" r").append(batches.region(piece)).append(' ').append(batches.sourceOffset(piece)).append("->")
                        .append(batches.remoteOffset(piece)).append(" x").append(batches.bytes(piece)).append(" @").append(batches.stagingOffset(piece));
            }
            cut.add(line.toString());
        }
        return cut;
    }

    @Test
    void aPlanThatFitsIsOneBatchWithOnePutPerRunAndRegion()
    {
        TransferPlan plan = plan(ROOM, 0, 10, ProducerFence.DONE, new int[] {0, 5, 2}, new int[] {4, 1, 1});

        assertThat(cutAll(plan, 10_000)).containsExactly(
                "pages 10..13 (450): r0 0->500 x200 @0 r1 0->250 x100 @200 r0 400->100 x100 @300 r1 200->50 x50 @400");
    }

    @Test
    void aRunLongerThanTheBatchIsSplitAtWholePages()
    {
        // 400 bytes hold two pages of both regions (300); the third page starts the next batch.
        TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {1, 7, 3}, new int[] {9, 0, 1});

        assertThat(cutAll(plan, 400)).containsExactly(
                "pages 0..2 (300): r0 100->700 x200 @0 r1 50->350 x100 @200",
                "pages 2..4 (300): r0 300->900 x100 @0 r1 150->450 x50 @100 r0 900->0 x100 @150 r1 450->0 x50 @250");
    }

    @Test
    void everyPageOfEveryRegionIsInExactlyOnePiece()
    {
        TransferPlan plan = plan(ROOM, 2, 40, ProducerFence.DONE, new int[] {0, 10, 5}, new int[] {20, 3, 1}, new int[] {8, 30, 4});
        PieceBatches batches = new PieceBatches(plan, STRIDES, 3 * 150);
        long bytes = 0;
        int pages = 0;
        int batchCount = 0;
        while (batches.hasNext()) {
            batches.next();
            assertThat(batches.firstPage()).isEqualTo(40 + pages);
            assertThat(batches.batchBytes()).isLessThanOrEqualTo(450);
            pages += batches.endPage() - batches.firstPage();
            bytes += batches.batchBytes();
            batchCount++;
        }
        assertThat(pages).isEqualTo(10);
        assertThat(bytes).isEqualTo(10 * 150);
        assertThat(batchCount).isEqualTo(4);
    }

    @Test
    void refusesABatchThatCannotHoldOnePageOfEveryRegion()
    {
        TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 1});

        assertThatThrownBy(() -> new PieceBatches(plan, STRIDES, 149)).hasMessageContaining("cannot hold one page of every region (150 bytes)");
        PieceBatches batches = new PieceBatches(plan, STRIDES, 150);
        batches.next();
        assertThat(batches.hasNext()).isFalse();
        assertThatThrownBy(batches::next).hasMessageContaining("no pages left");
    }
}
