package io.handoff.plugin.triton;

import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class KeyTileTest
{
    /**
     * F16 rows load into a tile as {@link KvRows#load} widens them, over every bit pattern: slots of 64 values each, the
     * tile's rows gathered from slots in runs and out of order, a whole row (runs of consecutive slots staged and widened
     * in one loop) or a head's half of it (where the machine has 512-bit vectors the widening runs in lanes); a tile
     * without an infinity or NaN, and one with them (widened again value by value).
     */
    @Test
    void f16RowsLoadAsKvRowsWidensThemOverEveryBitPattern()
    {
        try (Arena arena = Arena.ofConfined()) {
            // one byte past an aligned start, as the pool's rows may be; slot s holds patterns 64s .. 64s + 63
            MemorySegment data = arena.allocate(2 * 65536 + 1, 64).asSlice(1, 2 * 65536);
            for (int bits = 0; bits < 65536; bits++) {
                data.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * bits, (short) bits);
            }
            long rowBytes = 128;
            // patterns below 0x7c00 and from 0x8000 to 0xfbff: no infinity or NaN; then every slot, the first half in order (one
            // run), the second last first
            int[] finite = IntStream.concat(IntStream.range(0, 0x7c00 / 64), IntStream.range(0x8000 / 64, 0xfc00 / 64)).toArray();
            int[] all = IntStream.range(0, 1024).map(s -> s < 512 ? s : 1535 - s).toArray();
            for (int[] slots : new int[][] {finite, all}) {
                for (int width : new int[] {64, 32}) {
                    long headBytes = width == 64 ? 0 : 64;
                    float[] got = new float[slots.length * width];
                    // a whole row: slots in runs (a run staged in parts of 100 halves); half a row: widened sixteen at a time
                    KeyTile.loadRows(data, rowBytes, headBytes, KvDtype.F16, slots, 0, 0, slots.length, got, width, new short[100]);
                    float[] expected = new float[width];
                    for (int t = 0; t < slots.length; t++) {
                        KvRows.load(data, slots[t] * rowBytes + headBytes, KvDtype.F16, expected, 0, width);
                        for (int i = 0; i < width; i++) {
                            assertThat(Float.floatToRawIntBits(got[t * width + i])).as("slot %d value %d, width %d", slots[t], i, width)
                                    .isEqualTo(Float.floatToRawIntBits(expected[i]));
                        }
                    }
                }
            }
        }
    }
}
