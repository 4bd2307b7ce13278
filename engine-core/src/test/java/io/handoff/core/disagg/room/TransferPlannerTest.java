package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TransferPlannerTest
{
    static final RoomKey ROOM = new RoomKey(3, 1);

    @Test
    void runsContiguousOnBothSidesCoalesceAndOthersSplit()
    {
        int[] src = {4, 5, 6, 7, 20, 21, 9};
        int[] dst = {10, 11, 12, 30, 31, 32, 33};
        List<TransferPlan> plans = TransferPlanner.plan(ROOM, 2, 8, src, dst, 100, ProducerFence.DONE);

        assertThat(plans).singleElement().satisfies(plan -> {
            assertThat(plan.room()).isEqualTo(ROOM);
            assertThat(plan.chunk()).isEqualTo(2);
            assertThat(plan.firstPageIndex()).isEqualTo(8);
            // 4,5,6 -> 10,11,12 | 7 -> 30 (destination jumps) | 20,21 -> 31,32 (source jumps) | 9 -> 33
            assertThat(plan.srcPages()).containsExactly(4, 7, 20, 9);
            assertThat(plan.dstPages()).containsExactly(10, 30, 31, 33);
            assertThat(plan.runLengths()).containsExactly(3, 1, 2, 1);
        });
    }

    @Test
    void plansHoldAtMostTheBoundAndARunCrossingTheBoundIsSplit()
    {
        int[] src = {0, 1, 2, 3, 4, 5, 6};
        int[] dst = {50, 51, 52, 53, 54, 55, 56};
        List<TransferPlan> plans = TransferPlanner.plan(ROOM, 0, 0, src, dst, 3, ProducerFence.DONE);

        assertThat(plans).extracting(TransferPlan::pages).containsExactly(3, 3, 1);
        assertThat(plans).extracting(TransferPlan::firstPageIndex).containsExactly(0, 3, 6);
        assertThat(plans.get(1).srcPages()).containsExactly(3);
        assertThat(plans.get(1).dstPages()).containsExactly(53);
    }

    @Test
    void emptyChunkHasNoPlansAndMismatchedSidesAreRefused()
    {
        assertThat(TransferPlanner.plan(ROOM, 0, 0, new int[0], new int[0], 4, ProducerFence.DONE)).isEmpty();
        assertThatThrownBy(() -> TransferPlanner.plan(ROOM, 1, 0, new int[2], new int[3], 4, ProducerFence.DONE))
                .hasMessage("chunk 1 of room 3#1 maps 2 source pages to 3 destination pages");
    }

    /** Against a per-page model: every page is copied exactly once, to the right place, in bounded, maximally coalesced plans. */
    @Property(tries = 500, seed = "4242")
    void everyPageIsCopiedExactlyOnceToItsDestination(@ForAll @IntRange(min = 0, max = 80) int pages, @ForAll @IntRange(min = 1, max = 17) int maxPerPlan,
            @ForAll @IntRange(min = 0, max = 100) int firstPageIndex, @ForAll long seed)
    {
        Random random = new Random(seed);
        int[] src = pageIds(pages, random);
        int[] dst = pageIds(pages, random);

        List<TransferPlan> plans = TransferPlanner.plan(ROOM, 4, firstPageIndex, src, dst, maxPerPlan, ProducerFence.DONE);

        List<int[]> copies = new ArrayList<>();
        int expectedFirst = firstPageIndex;
        for (TransferPlan plan : plans) {
            assertThat(plan.pages()).isBetween(1, maxPerPlan);
            assertThat(plan.firstPageIndex()).isEqualTo(expectedFirst);
            expectedFirst += plan.pages();
            for (int run = 0; run < plan.runs(); run++) {
                if (run > 0) {
                    boolean mergeable = plan.srcPages()[run] == plan.srcPages()[run - 1] + plan.runLengths()[run - 1]
                            && plan.dstPages()[run] == plan.dstPages()[run - 1] + plan.runLengths()[run - 1];
                    assertThat(mergeable).as("adjacent runs that could be one").isFalse();
                }
                for (int k = 0; k < plan.runLengths()[run]; k++) {
                    copies.add(new int[] {plan.srcPages()[run] + k, plan.dstPages()[run] + k});
                }
            }
        }
        assertThat(copies).hasSize(pages);
        for (int i = 0; i < pages; i++) {
            assertThat(copies.get(i)).as("room page " + (firstPageIndex + i)).containsExactly(src[i], dst[i]);
        }
    }

    // distinct page ids, with long ascending stretches so that runs form
    private static int[] pageIds(int count, Random random)
    {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < count * 3; i++) {
            ids.add(i);
        }
        Collections.shuffle(ids, random);
        int[] pages = new int[count];
        for (int i = 0; i < count; i++) {
            pages[i] = i > 0 && random.nextInt(4) != 0 && !contains(pages, i, pages[i - 1] + 1) ? pages[i - 1] + 1 : ids.get(i);
            while (contains(pages, i, pages[i])) {
                pages[i] = ids.get(count + random.nextInt(count * 2));
            }
        }
        return pages;
    }

    private static boolean contains(int[] pages, int length, int page)
    {
        for (int i = 0; i < length; i++) {
            if (pages[i] == page) {
                return true;
            }
        }
        return false;
    }
}
