package io.handoff.bench.transfer;

import io.handoff.core.disagg.room.TransferPlanner;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;

import java.util.List;

/**
 * The plans of one round, built as a prefill builds a room's: every source page (in order) to its destination page,
 * coalesced into runs and bounded to {@code maxPagesPerPlan} pages per plan by the core's {@link TransferPlanner}.
 * Each round is a room of its own; the pages are final before it starts, so the fence is done.
 */
record RoundPlans(PageMapping mapping, int maxPagesPerPlan, int regions, long pageBytes)
{
    List<TransferPlan> plans(int round)
    {
        int pages = mapping.pages();
        int[] sources = PageMapping.contiguous(pages).destinations();
        return TransferPlanner.plan(new RoomKey(round, 0), 0, 0, sources, mapping.destinations(), maxPagesPerPlan, ProducerFence.DONE);
    }

    /** Bytes one round moves (every page of every region). */
    long roundBytes()
    {
        return (long) mapping.pages() * regions * pageBytes;
    }

    int plansPerRound()
    {
        return (mapping.pages() + maxPagesPerPlan - 1) / maxPagesPerPlan;
    }

    /** Bytes of the largest plan. */
    long planBytes()
    {
        return (long) Math.min(mapping.pages(), maxPagesPerPlan) * regions * pageBytes;
    }

    /** The mean length of a contiguous piece of one region a round copies: a run's pages times the page. */
    long meanPieceBytes()
    {
        long runs = 0;
        for (TransferPlan plan : plans(0)) {
            runs += plan.runs();
        }
        return (long) mapping.pages() * pageBytes / runs;
    }
}
