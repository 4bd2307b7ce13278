package io.handoff.core.kv;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReqToTokenTableTest
{
    @Property(tries = 300, seed = "42")
    void slotsReadBackAsPageTimesPageSizePlusOffset(
            @ForAll @IntRange(min = 1, max = 16) int pageSize,
            @ForAll @IntRange(min = 1, max = 64) int length,
            @ForAll @IntRange(min = 1, max = 8) int chunks,
            @ForAll long seed)
    {
        Random random = new Random(seed);
        ReqToTokenTable table = new ReqToTokenTable(3, 64, pageSize);
        int row = table.allocateRow().orElseThrow();
        int[] pages = random.ints((length + pageSize - 1) / pageSize, 0, 1000).toArray();

        // written in chunks, as chunked prefill and decode do
        int written = 0;
        for (int chunk = 0; chunk < chunks && written < length; chunk++) {
            int to = chunk == chunks - 1 ? length : written + random.nextInt(length - written + 1);
            table.mapPages(row, written, to, pages);
            written = to;
        }
        table.mapPages(row, written, length, pages);

        int[] expected = IntStream.range(0, length).map(p -> pages[p / pageSize] * pageSize + p % pageSize).toArray();
        assertThat(table.length(row)).isEqualTo(length);
        assertThat(table.read(row, length)).containsExactly(expected);
        int[] dst = new int[length + 2];
        table.read(row, length, dst, 2);
        assertThat(dst).endsWith(expected);
        int position = random.nextInt(length);
        assertThat(table.slot(row, position)).isEqualTo(expected[position]);
    }

    @Test
    void rowsAreHandedOutLowestFirstAndFreedRowsAreCleared()
    {
        ReqToTokenTable table = new ReqToTokenTable(2, 8, 4);
        assertThat(table.allocateRow()).hasValue(0);
        assertThat(table.allocateRow()).hasValue(1);
        assertThat(table.allocateRow()).isEmpty();
        table.mapPages(0, 0, 6, new int[] {3, 5});
        assertThat(table.read(0, 6)).containsExactly(12, 13, 14, 15, 20, 21);

        table.freeRow(0);
        assertThat(table.freeRows()).isEqualTo(1);
        assertThatThrownBy(() -> table.read(0, 1)).isInstanceOf(IllegalStateException.class);
        assertThat(table.allocateRow()).hasValue(0);
        assertThat(table.length(0)).isZero();
        assertThatThrownBy(() -> table.read(0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 positions written");
    }

    @Test
    void rewritingAPrefixSwitchesItToOtherPages()
    {
        ReqToTokenTable table = new ReqToTokenTable(1, 8, 2);
        int row = table.allocateRow().orElseThrow();
        table.mapPages(row, 0, 5, new int[] {7, 8, 9});
        // the prefix cache already held the first two pages under other ids
        table.mapPages(row, 0, 4, new int[] {1, 2});
        assertThat(table.read(row, 5)).containsExactly(2, 3, 4, 5, 18);
    }

    @Test
    void refusesHolesReadsPastTheWrittenLengthAndTooFewPages()
    {
        ReqToTokenTable table = new ReqToTokenTable(1, 8, 2);
        int row = table.allocateRow().orElseThrow();
        table.mapPages(row, 0, 2, new int[] {4});
        assertThatThrownBy(() -> table.mapPages(row, 3, 4, new int[] {4, 5})).hasMessageContaining("hole");
        assertThatThrownBy(() -> table.read(row, 3)).hasMessageContaining("2 positions written");
        assertThatThrownBy(() -> table.slot(row, 2)).hasMessageContaining("2 positions written");
        assertThatThrownBy(() -> table.slot(row, -1)).hasMessageContaining(">= 0");
        assertThatThrownBy(() -> table.mapPages(row, 2, 5, new int[] {4, 5})).hasMessageContaining("do not cover");
        assertThatThrownBy(() -> table.mapPages(row, 2, 4, new int[] {4, -1})).hasMessageContaining("-1");
        assertThatThrownBy(() -> table.mapPages(row, 2, 9, new int[] {4, 5, 6, 7, 8})).hasMessageContaining("max context");
        assertThat(table.length(row)).isEqualTo(2);
        assertThat(table.read(row, 2)).containsExactly(8, 9);
    }
}
