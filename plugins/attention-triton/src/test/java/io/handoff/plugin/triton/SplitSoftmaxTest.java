package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

class SplitSoftmaxTest
{
    /** The exps come from ExactExp's vector lanes, not its cold-start scalar path: wait until they are compiled. */
    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

    /**
     * A split's partial is the bits of the scalar loop with StrictMath.exp it replaced, for every split length up to
     * a few lane widths (so every tail) and for scores with a large spread, where many weights are tiny or zero.
     */
    @Test
    void partialIsTheScalarStrictMathLoopBitForBit()
    {
        try (Arena arena = Arena.ofConfined()) {
            KvFixture fixture = KvFixture.create(arena, TritonAttentionTest.GQA, 16, KvDtype.F32, 5, 64);
            int qkDim = fixture.geometry.qkDim();
            int vDim = fixture.geometry.vDim();
            int[] slots = fixture.slots[0];
            for (float scale : new float[] {fixture.geometry.scale(), 40f}) {
                for (int count = 1; count <= 40; count++) {
                    KeyTile tile = new KeyTile(fixture.kv, 64, qkDim, vDim);
                    tile.load(0, slots, 0, 0, count, 1);
                    float[] q = fixture.query(0, count);
                    SplitSoftmax.Partials got = new SplitSoftmax.Partials(1, vDim);
                    SplitSoftmax.partial(tile, count, q, qkDim, scale, got, 0);

                    float max = Float.NEGATIVE_INFINITY;
                    float[] scores = new float[count];
                    for (int t = 0; t < count; t++) {
                        scores[t] = SplitSoftmax.dot(q, qkDim, tile.keys, t * qkDim, qkDim) * scale;
                        max = Math.max(max, scores[t]);
                    }
                    float sum = 0;
                    float[] acc = new float[vDim];
                    for (int t = 0; t < count; t++) {
                        float p = (float) StrictMath.exp(scores[t] - max);
                        sum += p;
                        SplitSoftmax.axpy(p, tile.values, t * tile.valueStride, acc, 0, vDim);
                    }
                    assertThat(got.max[0]).as("max, count %s", count).isEqualTo(max);
                    assertThat(Float.floatToRawIntBits(got.sum[0])).as("sum, count %s", count).isEqualTo(Float.floatToRawIntBits(sum));
                    assertThat(Arrays.equals(got.acc, acc)).as("acc, count %s", count).isTrue();
                }
            }
        }
    }

    /**
     * A group's partials, four heads side by side where there are four, are each head's own {@link SplitSoftmax#partial}
     * bit for bit: for every group size from one to nine, split lengths around the lane widths, GQA heads of 40 and 64
     * values and MLA's latent rows (keys of 72 or 160 values whose first 60 or 128 are the value), and a wide spread of scores.
     */
    @Test
    void aGroupsPartialsAreEachHeadsOwnBitForBit()
    {
        try (Arena arena = Arena.ofConfined()) {
            // whole 16-value steps too (the 16-lane scores where the machine has them), and MLA's latent shape
            AttentionGeometry gqa64 = new AttentionGeometry(KvLayout.GQA, 8, 2, 64, 64, 0.125f);
            AttentionGeometry mla160 = new AttentionGeometry(KvLayout.MLA, 8, 1, 160, 128, 0.08f);
            for (AttentionGeometry shape : new AttentionGeometry[] {TritonAttentionTest.GQA, TritonAttentionTest.MLA, gqa64, mla160}) {
                KvFixture fixture = KvFixture.create(arena, shape, 16, KvDtype.F32, 5, 64);
                int qkDim = fixture.geometry.qkDim();
                int vDim = fixture.geometry.vDim();
                int[] slots = fixture.slots[0];
                for (int heads = 1; heads <= 9; heads++) {
                    for (int count : new int[] {1, 2, 7, 8, 9, 17, 40}) {
                        KeyTile tile = new KeyTile(fixture.kv, 64, qkDim, vDim, false, heads);
                        tile.load(0, slots, 0, 0, count, 0);
                        float[] q = new float[heads * qkDim];
                        java.util.SplittableRandom random = new java.util.SplittableRandom(heads * 100 + count);
                        for (int i = 0; i < q.length; i++) {
                            q[i] = (float) random.nextGaussian() * (i % 3 == 0 ? 9 : 1);
                        }
                        SplitSoftmax.Partials group = new SplitSoftmax.Partials(heads + 1, vDim);
                        SplitSoftmax.partials(tile, count, q, 0, heads, 0.7f, group, 1);
                        KeyTile single = new KeyTile(fixture.kv, 64, qkDim, vDim);
                        single.load(0, slots, 0, 0, count, 0);
                        for (int g = 0; g < heads; g++) {
                            SplitSoftmax.Partials one = new SplitSoftmax.Partials(1, vDim);
                            SplitSoftmax.partial(single, count, q, g * qkDim, 0.7f, one, 0);
                            String what = shape.layout() + " heads " + heads + " count " + count + " head " + g;
                            assertThat(Float.floatToRawIntBits(group.max[1 + g])).as("max, %s", what).isEqualTo(Float.floatToRawIntBits(one.max[0]));
                            assertThat(Float.floatToRawIntBits(group.sum[1 + g])).as("sum, %s", what).isEqualTo(Float.floatToRawIntBits(one.sum[0]));
                            assertThat(Arrays.equals(group.acc, (1 + g) * vDim, (2 + g) * vDim, one.acc, 0, vDim)).as("acc, %s", what).isTrue();
                        }
                    }
                }
            }
        }
    }
}
