package io.handoff.plugin.triton;

import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

class KeyTileTest
{
    /**
     * An F16 row loads as {@link KvRows#load} widens it, over every bit pattern: rows of 64 values (whole vectors, widened in
     * lanes where the machine has 512-bit vectors) whether or not they hold an infinity or a NaN, and rows of other lengths.
     */
    @Test
    void f16RowsLoadAsKvRowsWidensThemOverEveryBitPattern()
    {
        try (Arena arena = Arena.ofConfined()) {
            // one byte past an aligned start, as a row inside the pool may be
            MemorySegment data = arena.allocate(2 * 65536 + 1, 64).asSlice(1, 2 * 65536);
            for (int bits = 0; bits < 65536; bits++) {
                data.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * bits, (short) bits);
            }
            for (int width : new int[] {64, 40, 7}) {
                float[] expected = new float[width];
                float[] got = new float[width + 3];
                for (int start = 0; start + width <= 65536; start += width) {
                    KvRows.load(data, 2L * start, KvDtype.F16, expected, 0, width);
                    KeyTile.loadRow(data, 2L * start, KvDtype.F16, got, 3, width);
                    for (int i = 0; i < width; i++) {
                        assertThat(Float.floatToRawIntBits(got[3 + i])).as("F16 %04x, width %d", start + i, width)
                                .isEqualTo(Float.floatToRawIntBits(expected[i]));
                    }
                }
            }
        }
    }
}
