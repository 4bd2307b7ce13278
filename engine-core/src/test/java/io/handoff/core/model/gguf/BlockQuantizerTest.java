package io.handoff.core.model.gguf;

import io.handoff.core.model.BlockFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;

/** Values written as blocks read back ({@link BlockFormat#decode}) within the format's step, on typical and extreme blocks. */
class BlockQuantizerTest
{
    /** The largest distance a value may land from itself: half a step of the block's grid, a whole step for Q6_K's 8-bit scales. */
    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void gaussianValuesComeBackWithinTheirBlocksStep(BlockFormat format)
    {
        SplittableRandom random = new SplittableRandom(3);
        float[] x = new float[4096];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (random.nextGaussian() * (i < 2048 ? 0.02 : 3));
        }
        float[] y = roundTrip(format, x);
        int n = format.blockElements();
        for (int b = 0; b < x.length / n; b++) {
            float min = Float.POSITIVE_INFINITY;
            float max = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                min = Math.min(min, x[b * n + i]);
                max = Math.max(max, x[b * n + i]);
            }
            double range = Math.max(Math.abs(min), Math.abs(max));
            double step = switch (format) {
                case Q8_0 -> range / 127;
                case Q4_0 -> range / 8;
                case Q5_0 -> range / 16;
                case Q4_1 -> (max - min) / 15.0;
                case Q5_1 -> (max - min) / 31.0;
                // sub-block grids quantized against the block's largest: a step can grow by the 6-bit scale's rounding
                case Q4_K -> (max - Math.min(0, min)) / 15.0 * 1.1;
                case Q5_K -> (max - Math.min(0, min)) / 31.0 * 1.1;
                case Q6_K -> range / 32 * 1.1;
            };
            for (int i = 0; i < n; i++) {
                assertThat((double) y[b * n + i]).as("%s block %d value %d", format, b, i).isCloseTo(x[b * n + i], offset(step + range * 2e-3));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(BlockFormat.class)
    void zerosConstantsAndASingleSpikeStayFinite(BlockFormat format)
    {
        int n = 512;
        float[] zeros = new float[n];
        for (float v : roundTrip(format, zeros)) {
            assertThat(v == 0).as("%s of zeros", format).isTrue();   // -0 where ggml's scale is -0 too
        }

        float[] constant = new float[n];
        java.util.Arrays.fill(constant, -1.25f);
        for (float v : roundTrip(format, constant)) {
            assertThat((double) v).isCloseTo(-1.25, offset(1.25 / 7));
        }

        float[] spike = new float[n];
        spike[3] = 1000f;
        float[] y = roundTrip(format, spike);
        assertThat((double) y[3]).isCloseTo(1000, offset(1000 * 0.01));
        for (int i = 0; i < n; i++) {
            assertThat(Float.isFinite(y[i])).isTrue();
        }
    }

    @Test
    void aQ8_0BlockIsGgmlsReferenceBytes()
    {
        float[] x = new float[32];
        x[0] = 2.54f;    // d = 0.02 (F16-rounded when stored), codes round(x / d) half away from zero
        x[1] = -0.01f;
        x[2] = 0.03f;
        byte[] block = BlockQuantizer.encode(BlockFormat.Q8_0, x, 0, 32);
        assertThat(Float.float16ToFloat((short) ((block[0] & 0xff) | (block[1] << 8)))).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(2.54f / 127)));
        assertThat(block[2]).isEqualTo((byte) 127);
        assertThat(block[3]).isEqualTo((byte) -1);     // -0.5 away from zero
        assertThat(block[4]).isEqualTo((byte) 2);      // 1.5 away from zero
    }

    private static float[] roundTrip(BlockFormat format, float[] x)
    {
        byte[] bytes = BlockQuantizer.encode(format, x, 0, x.length);
        assertThat(bytes).hasSize(x.length / format.blockElements() * format.blockBytes());
        return format.decodeAll(MemorySegment.ofArray(bytes), x.length);
    }
}
