package io.handoff.plugin.aiter;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class WorkScheduleTest
{
    @Test
    void itemsAreEachRequestsSplitsInOrderAndTheReduceMapPointsAtThem()
    {
        WorkSchedule schedule = WorkSchedule.forDecode(new int[] {300, 1, 128, 129}, 128, 3);
        assertThat(schedule.itemRequest()).containsExactly(0, 0, 0, 1, 2, 3, 3);
        assertThat(schedule.itemFrom()).containsExactly(0, 128, 256, 0, 0, 0, 128);
        assertThat(schedule.itemTo()).containsExactly(128, 256, 300, 1, 128, 128, 129);
        assertThat(schedule.reduceIndptr()).containsExactly(0, 3, 4, 5, 7);
    }

    @Test
    void everyItemGoesToExactlyOneWorkerAndWorkerCountChangesOnlyTheAssignment()
    {
        Random random = new Random(41);
        int[] seqLens = IntStream.range(0, 32).map(i -> 1 + random.nextInt(2000)).toArray();
        WorkSchedule one = WorkSchedule.forDecode(seqLens, 128, 1);
        for (int workers : new int[] {1, 2, 7, 64}) {
            WorkSchedule schedule = WorkSchedule.forDecode(seqLens, 128, workers);
            assertThat(schedule.workerItems().length).isEqualTo(workers);
            int[] assigned = Arrays.stream(schedule.workerItems()).flatMapToInt(Arrays::stream).sorted().toArray();
            assertThat(assigned).containsExactly(IntStream.range(0, schedule.items()).toArray());
            assertThat(schedule.itemRequest()).isEqualTo(one.itemRequest());
            assertThat(schedule.itemFrom()).isEqualTo(one.itemFrom());
            assertThat(schedule.itemTo()).isEqualTo(one.itemTo());
            assertThat(schedule.reduceIndptr()).isEqualTo(one.reduceIndptr());
        }
    }

    @Test
    void greedyBalanceKeepsWorkerLoadsWithinTheLargestItem()
    {
        Random random = new Random(42);
        long[] costs = random.longs(200, 1, 129).toArray();
        for (int workers : new int[] {2, 3, 16}) {
            int[][] lists = WorkSchedule.balance(costs, workers);
            long[] loads = Arrays.stream(lists).mapToLong(list -> Arrays.stream(list).mapToLong(item -> costs[item]).sum()).toArray();
            long spread = Arrays.stream(loads).max().orElseThrow() - Arrays.stream(loads).min().orElseThrow();
            assertThat(spread).as("loads %s", Arrays.toString(loads)).isLessThanOrEqualTo(Arrays.stream(costs).max().orElseThrow());
            for (int[] list : lists) {
                assertThat(list).isSorted();
            }
        }
    }
}
