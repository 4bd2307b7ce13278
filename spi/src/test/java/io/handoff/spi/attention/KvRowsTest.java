package io.handoff.spi.attention;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class KvRowsTest
{
    @ParameterizedTest
    @EnumSource(KvDtype.class)
    void roundingGivesWhatAStoreAndALoadGive(KvDtype dtype)
    {
        Random random = new Random(5);
        float[] values = new float[257];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * Math.pow(10, random.nextInt(7) - 3));
        }
        values[3] = -0.0f;
        values[4] = 70000f;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate((long) values.length * dtype.bytes());
            KvRows.store(region, 0, dtype, values, 0, values.length);
            float[] loaded = new float[values.length];
            KvRows.load(region, 0, dtype, loaded, 0, values.length);
            float[] rounded = values.clone();
            KvRows.round(rounded, 0, rounded.length, dtype);
            for (int i = 0; i < values.length; i++) {
                assertThat(Float.floatToRawIntBits(rounded[i])).as("element %d (%s)", i, values[i]).isEqualTo(Float.floatToRawIntBits(loaded[i]));
            }
        }
    }

    @Test
    void f16IsIeeeHalfPrecisionRoundedToNearestEven()
    {
        float[] values = {1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f, 65504f, 65520f, 0x1p-24f, 0x1p-26f};
        KvRows.round(values, 0, values.length, KvDtype.F16);
        // a tie rounds to the even neighbour; above the tie rounds up; 65520 overflows; the smallest subnormal survives
        assertThat(values).containsExactly(1.0f, 1.0f, 1.0f + 0x1p-10f, 65504f, Float.POSITIVE_INFINITY, 0x1p-24f, 0.0f);
    }

    @Test
    void f32RowsAreLeftAsTheyAre()
    {
        float[] values = {0.1f, -3.3e-7f, 1e30f};
        KvRows.round(values, 0, values.length, KvDtype.F32);
        assertThat(values).containsExactly(0.1f, -3.3e-7f, 1e30f);
    }
}
