package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import io.handoff.spi.attention.KvDtype;
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
}
