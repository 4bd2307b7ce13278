package io.handoff.plugin.triton;

import io.handoff.plugin.triton.SplitSoftmax.Partials;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * llama.cpp's F16 flash-attention arithmetic: hand-worked cases where its roundings show (values summed in an F16
 * accumulator, the query and keys rounded to F16, ggml's lane order in a score), then the invariances every arithmetic
 * keeps (decode equals extend at a position, a request alone equals it in a batch, any chunking, any thread count), and
 * the distance from the double-precision reference that F16 allows.
 */
class LlamaCppSoftmaxTest
{
    private static final int DIM = 64;
    private static final AttentionGeometry GQA = new AttentionGeometry(KvLayout.GQA, 8, 2, DIM, DIM, 0.125f, AttentionArithmetic.LLAMA_CPP_F16);
    private static final AttentionGeometry MLA = new AttentionGeometry(KvLayout.MLA, 8, 1, 72, 60, (float) (1 / Math.sqrt(72)),
            AttentionArithmetic.LLAMA_CPP_F16);
    private static final int[] RAGGED = {1, 7, 255, 256, 257, 600};

    @Test
    void valuesAreSummedInF16()
    {
        try (Arena arena = Arena.ofConfined()) {
            KeyTile tile = tile(arena);
            // every score 0: each key adds its value with weight 1
            Arrays.fill(tile.values, 0, DIM, 1f);
            Arrays.fill(tile.values, DIM, 3 * DIM, 0x1p-11f);
            float[] q = new float[DIM];
            // 1 + 2^-11 is a tie between 1 and 1 + 2^-10 in F16 and rounds to even: the small values vanish
            assertThat(attend(tile, 2, q, false)[0]).isEqualTo(0.5f);
            assertThat(attend(tile, 3, q, false)[0]).isEqualTo(1f * (1f / 3f));
            Partials exact = new Partials(1, DIM);
            SplitSoftmax.partial(tile, 3, q, 0, 1f, exact, 0);
            float[] f32 = new float[DIM];
            SplitSoftmax.finish(exact, 0, f32, 0);
            assertThat(f32[0]).isEqualTo((1f + 0x1p-10f) / 3f);
        }
    }

    @Test
    void theQueryAndKeysAreRoundedToF16()
    {
        try (Arena arena = Arena.ofConfined()) {
            KeyTile tile = tile(arena);
            float[] q = new float[DIM];
            q[0] = 1f + 0x1p-12f;
            tile.keys[0] = 1f + 0x1p-12f;
            Arrays.fill(tile.values, 0, DIM, 1f);
            // key 0 scores 1 (both rounded to 1), key 1 scores 0 and brings value 0
            float weight = (float) StrictMath.exp(-1f);
            assertThat(attend(tile, 2, q, true)[0]).isEqualTo(1f * (1f / (1f + weight)));
        }
    }

    @Test
    void aScoreSumsItsProductsInGgmlsLaneOrder()
    {
        float[] q = new float[65];
        float[] k = new float[65];
        // lane 0 of accumulators 0..3: (2^24 + 1) + (-2^24 + 1) = 2^24 - 2^24 + 1 = 1 (a running sum would give 2)
        q[0] = 4096;
        k[0] = 4096;
        q[16] = -4096;
        k[16] = 4096;
        q[32] = 1;
        k[32] = 1;
        q[48] = 1;
        k[48] = 1;
        assertThat(LlamaCppSoftmax.dot(q, k, 0, 64)).isEqualTo(1f);
        // a value past the last 64 joins in double precision
        q[64] = 0x1p-20f;
        k[64] = 1;
        assertThat(LlamaCppSoftmax.dot(q, k, 0, 65)).isEqualTo(1f + 0x1p-20f);
    }

    /**
     * Scores taken a vector of keys at a time (keys in lanes, the tile's {@code keysByDim}) and a GQA group's heads together
     * are the same bits as each key's {@link LlamaCppSoftmax#dot} and each head on its own, whatever the number of keys.
     */
    @Test
    void keysInLanesAndHeadsTogetherAreTheSameBitsAsOneByOne()
    {
        int heads = 4;
        Random random = new Random(41);
        try (Arena arena = Arena.ofConfined()) {
            KvFixture fixture = KvFixture.create(arena, GQA, 16, KvDtype.F32, 1, 3);
            KeyTile byLane = new KeyTile(fixture.kv, 48, DIM, DIM, true, heads);
            KeyTile byKey = new KeyTile(fixture.kv, 48, DIM, DIM, false, 1);
            assertThat(byLane.keysByDim).isNotNull();
            for (int i = 0; i < 48 * DIM; i++) {
                byLane.keys[i] = byKey.keys[i] = LlamaCppSoftmax.f16((float) random.nextGaussian());
                byLane.values[i] = byKey.values[i] = LlamaCppSoftmax.f16((float) random.nextGaussian());
            }
            float[] q = new float[heads * DIM];
            for (int i = 0; i < q.length; i++) {
                q[i] = (float) random.nextGaussian() * 3;
            }
            for (int keys : new int[] {1, 13, 16, 37, 48}) {
                byLane.transposeKeys(keys);
                Partials together = new Partials(heads, DIM);
                LlamaCppSoftmax.partials(byLane, keys, q, 0, heads, 0.125f, together, 0);
                for (int g = 0; g < heads; g++) {
                    Partials alone = new Partials(1, DIM);
                    LlamaCppSoftmax.partial(byKey, keys, q, g * DIM, 0.125f, alone, 0);
                    assertThat(together.max[g]).as("head %d, %d keys: max", g, keys).isEqualTo(alone.max[0]);
                    assertThat(together.sum[g]).as("head %d, %d keys: sum", g, keys).isEqualTo(alone.sum[0]);
                    assertThat(Arrays.copyOfRange(together.acc, g * DIM, (g + 1) * DIM)).as("head %d, %d keys", g, keys).isEqualTo(alone.acc);
                }
            }
        }
    }

    /** The vector rounding gives Float.floatToFloat16's value for every kind of float: normal, subnormal in F16, overflowing, ties. */
    @Test
    void laneRoundingToF16IsFloatToFloat16s()
    {
        Random random = new Random(23);
        float[] x = new float[1 << 16];
        for (int i = 0; i < x.length; i++) {
            x[i] = switch (i % 4) {
                case 0 -> Float.intBitsToFloat(random.nextInt());
                case 1 -> (float) random.nextGaussian() * 70000f;
                case 2 -> (float) random.nextGaussian() * 1e-5f;
                default -> Float.float16ToFloat((short) random.nextInt()) + (random.nextBoolean() ? 1 : -1) * Math.ulp(Float.float16ToFloat((short) random.nextInt()));
            };
        }
        x[0] = 65520f;
        x[1] = 65519.996f;
        x[2] = -0f;
        x[3] = Float.POSITIVE_INFINITY;
        x[4] = 0x1p-25f;
        x[5] = 0x1.8p-24f;
        float[] rounded = x.clone();
        LlamaCppSoftmax.roundToF16(rounded, 0, rounded.length);
        for (int i = 0; i < x.length; i++) {
            float expected = Float.float16ToFloat(Float.floatToFloat16(x[i]));
            if (Float.isNaN(expected)) {
                assertThat(rounded[i]).as("%s", x[i]).isNaN();
            }
            else {
                assertThat(Float.floatToRawIntBits(rounded[i])).as("%s (0x%08x)", x[i], Float.floatToRawIntBits(x[i])).isEqualTo(Float.floatToRawIntBits(expected));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = KvDtype.class)
    void isWithinF16sRoundingOfTheReference(KvDtype dtype)
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GQA, 16, dtype, 21, RAGGED);
            AttentionBackend backend = triton(fixture);
            AttentionBackend reference = new ReferenceAttention(GQA, fixture.kv);
            KvFixture.Step decode = fixture.decode(backend, 0, 1, 2, 3, 4, 5);
            assertThat(KvFixture.maxAbsDifference(fixture.run(backend, decode), fixture.run(reference, decode))).isLessThanOrEqualTo(4e-3f);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"GQA", "MLA"})
    void decodeEqualsExtendAndIsTheSameAloneInABatchAndOnAnyThreads(String layout)
            throws Exception
    {
        AttentionGeometry geometry = layout.equals("GQA") ? GQA : MLA;
        try (Arena arena = Arena.ofShared(); ForkJoinPool three = new ForkJoinPool(3)) {
            KvFixture fixture = KvFixture.create(arena, geometry, 16, KvDtype.F32, 22, RAGGED);
            AttentionBackend backend = triton(fixture);
            KvFixture.Step batch = fixture.decode(backend, 0, 1, 2, 3, 4, 5);
            float[] decoded = fixture.run(backend, batch);
            float[] extended = fixture.run(backend, fixture.prefill(0, 1, 2, 3, 4, 5));
            assertThat(three.submit(() -> fixture.run(backend, batch)).get()).isEqualTo(decoded);
            int row = 0;
            for (int s = 0; s < RAGGED.length; s++) {
                row += RAGGED[s];
                assertThat(fixture.row(decoded, s)).as("seq_len %d, extend", RAGGED[s]).isEqualTo(fixture.row(extended, row - 1));
                assertThat(fixture.run(backend, fixture.decode(backend, s))).as("seq_len %d alone", RAGGED[s]).isEqualTo(fixture.row(decoded, s));
            }
            float[] whole = fixture.run(backend, fixture.prefill(5));
            for (int from = 0; from < 600; from += 77) {
                int to = Math.min(from + 77, 600);
                float[] part = fixture.run(backend, fixture.extend(new int[] {5}, new int[] {from}, new int[] {to}));
                for (int p = from; p < to; p++) {
                    assertThat(fixture.row(part, p - from)).as("position %d in chunk %d", p, from).isEqualTo(fixture.row(whole, p));
                }
            }
        }
    }

    private static AttentionBackend triton(KvFixture fixture)
    {
        return new TritonProvider().create(fixture.geometry, fixture.kv, PluginSettings.empty("triton"));
    }

    /** A tile over a one-page F32 pool whose keys and values the test writes itself (as F16 values, as a tile loads them). */
    private static KeyTile tile(Arena arena)
    {
        return new KeyTile(KvFixture.create(arena, GQA, 16, KvDtype.F32, 1, 3).kv, 16, DIM, DIM);
    }

    private static float[] attend(KeyTile tile, int keys, float[] q, boolean unitScale)
    {
        Partials partial = new Partials(1, DIM);
        LlamaCppSoftmax.roundToF16(tile.keys, 0, keys * DIM);
        LlamaCppSoftmax.roundToF16(tile.values, 0, keys * DIM);
        LlamaCppSoftmax.partial(tile, keys, q, 0, unitScale ? 1f : 0.125f, partial, 0);
        float[] out = new float[DIM];
        LlamaCppSoftmax.finish(partial, 0, out, 0);
        return out;
    }
}
