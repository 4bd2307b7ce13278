package io.handoff.plugin.aiter;

import io.handoff.math.ExactExp;
import io.handoff.plugin.triton.TritonProvider;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Accuracy against {@link ReferenceAttention} and bit-exact invariance of the aiter MLA kernels.
 * Tolerance: the maximum absolute difference from the double-precision reference (and from triton) is
 * at most {@value #TOLERANCE} for F32 and BF16 KV (the reference reads the same BF16 values), with
 * latent rows in [-1, 1] and queries in [-2, 2].
 */
class AiterAttentionTest
{
    /** The exps come from ExactExp's vector lanes, not its cold-start scalar path: wait until they are compiled. */
    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

    static final float TOLERANCE = 2e-6f;
    private static final PluginSettings SETTINGS = PluginSettings.empty("aiter");
    /** Around both backends' split boundaries (aiter 128, triton 256). */
    private static final int[] RAGGED = {1, 7, 127, 128, 129, 255, 256, 257, 600};
    /** Latent 60 + rope 12 with 8 heads (padded to 16): small dims that are not powers of two. */
    static final AttentionGeometry MLA = new AttentionGeometry(KvLayout.MLA, 8, 1, 72, 60, (float) (1 / Math.sqrt(72)));

    static AttentionBackend aiter(LatentPool pool)
    {
        return new AiterProvider().create(pool.geometry, pool.kv, SETTINGS);
    }

    static AttentionBackend aiter(LatentPool pool, int workers)
    {
        return new AiterProvider().create(pool.geometry, pool.kv, SETTINGS, workers);
    }

    static Stream<Arguments> pageSizesAndDtypes()
    {
        List<Arguments> cases = new ArrayList<>();
        for (int pageSize : new int[] {1, 3, 16, 64}) {
            for (KvDtype dtype : KvDtype.values()) {
                cases.add(Arguments.of(pageSize, dtype));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "page size {0}, {1}")
    @MethodSource("pageSizesAndDtypes")
    void decodeOfARaggedBatchMatchesTheReferenceAndTriton(int pageSize, KvDtype dtype)
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, pageSize, dtype, 31, RAGGED);
            int[] order = {4, 0, 8, 2, 6, 1, 7, 3, 5};
            float[] actual = pool.decode(aiter(pool), order);
            float[] expected = pool.decode(new ReferenceAttention(MLA, pool.kv), order);
            float[] triton = pool.decode(new TritonProvider().create(MLA, pool.kv, PluginSettings.empty("triton")), order);
            assertThat(LatentPool.maxAbsDifference(actual, expected)).isLessThanOrEqualTo(TOLERANCE);
            assertThat(LatentPool.maxAbsDifference(actual, triton)).isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @ParameterizedTest(name = "page size {0}, {1}")
    @MethodSource("pageSizesAndDtypes")
    void extendOfARaggedBatchWithPrefixesMatchesTheReferenceAndTriton(int pageSize, KvDtype dtype)
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, pageSize, dtype, 32, 1, 7, 300, 270);
            int[] sequences = {0, 1, 2, 3};
            int[] from = {0, 0, 100, 256};
            int[] to = {1, 7, 300, 270};
            float[] actual = pool.extend(aiter(pool), sequences, from, to);
            float[] expected = pool.extend(new ReferenceAttention(MLA, pool.kv), sequences, from, to);
            float[] triton = pool.extend(new TritonProvider().create(MLA, pool.kv, PluginSettings.empty("triton")), sequences, from, to);
            assertThat(LatentPool.maxAbsDifference(actual, expected)).isLessThanOrEqualTo(TOLERANCE);
            assertThat(LatentPool.maxAbsDifference(actual, triton)).isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @ParameterizedTest
    @EnumSource(KvDtype.class)
    void mlaAtDeepSeekDimsWithTwoHeadTilesMatchesTheReference(KvDtype dtype)
    {
        // kv_lora_rank 512 + rope 64; 20 heads pad to 32, two tiles of 16.
        AttentionGeometry deepSeek = new AttentionGeometry(KvLayout.MLA, 20, 1, 576, 512, (float) (1 / Math.sqrt(192)));
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, deepSeek, 64, dtype, 33, 600, 129);
            ReferenceAttention reference = new ReferenceAttention(deepSeek, pool.kv);
            assertThat(LatentPool.maxAbsDifference(pool.decode(aiter(pool), 0, 1), pool.decode(reference, 0, 1))).isLessThanOrEqualTo(TOLERANCE);
            int[] one = {1};
            int[] from = {120};
            int[] to = {129};
            assertThat(LatentPool.maxAbsDifference(pool.extend(aiter(pool), one, from, to), pool.extend(reference, one, from, to)))
                    .isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @Test
    void outputsAreBitIdenticalAcrossRunsWorkerCountsAndThreadPools()
            throws Exception
    {
        try (Arena arena = Arena.ofShared(); ForkJoinPool one = new ForkJoinPool(1); ForkJoinPool three = new ForkJoinPool(3)) {
            LatentPool pool = new LatentPool(arena, MLA, 16, KvDtype.BF16, 34, RAGGED);
            int[] all = IntStream.range(0, RAGGED.length).toArray();
            float[] decoded = pool.decode(aiter(pool, 1), all);
            float[] extended = pool.prefill(aiter(pool, 1), 4, 7);
            for (int workers : new int[] {1, 2, 5, 16}) {
                AttentionBackend backend = aiter(pool, workers);
                assertThat(pool.decode(backend, all)).as("decode, %d workers", workers).isEqualTo(decoded);
                assertThat(pool.prefill(backend, 4, 7)).as("extend, %d workers", workers).isEqualTo(extended);
            }
            AttentionBackend backend = aiter(pool);
            assertThat(one.submit(() -> pool.decode(backend, all)).get()).isEqualTo(decoded);
            assertThat(three.submit(() -> pool.decode(backend, all)).get()).isEqualTo(decoded);
            assertThat(three.submit(() -> pool.prefill(backend, 4, 7)).get()).isEqualTo(extended);
        }
    }

    @Test
    void decodeOfARequestAloneIsBitIdenticalToDecodeInABatchOf32()
    {
        Random random = new Random(35);
        int[] lengths = new int[32];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = i < RAGGED.length ? RAGGED[i] : 1 + random.nextInt(600);
        }
        int[] order = IntStream.range(0, 32).map(i -> (i * 13 + 5) % 32).toArray();
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, 16, KvDtype.F32, 35, lengths);
            AttentionBackend backend = aiter(pool, 4);
            float[] batched = pool.decode(backend, order);
            for (int i = 0; i < order.length; i++) {
                float[] alone = pool.decode(backend, order[i]);
                assertThat(pool.row(batched, i)).as("request %d (seq_len %d)", order[i], lengths[order[i]]).isEqualTo(alone);
            }
        }
    }

    @Test
    void extendOfAPromptAloneIsBitIdenticalToExtendInABatch()
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, 3, KvDtype.BF16, 36, 280, 9, 300, 33);
            AttentionBackend backend = aiter(pool, 3);
            float[] alone = pool.prefill(backend, 0);
            float[] batched = pool.extend(backend, new int[] {1, 0, 2, 3}, new int[] {0, 0, 250, 0}, new int[] {9, 280, 300, 33});
            for (int p = 0; p < 280; p++) {
                assertThat(pool.row(batched, 9 + p)).as("position %d", p).isEqualTo(pool.row(alone, p));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {64, 17, 1})
    void extendIsBitIdenticalWhateverThePromptsChunking(int chunk)
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, 16, KvDtype.BF16, 37, 300);
            AttentionBackend backend = aiter(pool);
            float[] whole = pool.prefill(backend, 0);
            for (int from = 0; from < 300; from += chunk) {
                int to = Math.min(from + chunk, 300);
                float[] part = pool.extend(backend, new int[] {0}, new int[] {from}, new int[] {to});
                for (int p = from; p < to; p++) {
                    assertThat(pool.row(part, p - from)).as("position %d in chunk at %d", p, from).isEqualTo(pool.row(whole, p));
                }
            }
        }
    }

    @Test
    void decodeOfPositionPIsBitIdenticalToExtendOfPositionP()
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, 64, KvDtype.F32, 38, RAGGED);
            AttentionBackend backend = aiter(pool);
            int[] all = IntStream.range(0, RAGGED.length).toArray();
            float[] decoded = pool.decode(backend, all);
            float[] extended = pool.prefill(backend, all);
            int row = 0;
            for (int s = 0; s < RAGGED.length; s++) {
                row += RAGGED[s];
                assertThat(pool.row(decoded, s)).as("seq_len %d", RAGGED[s]).isEqualTo(pool.row(extended, row - 1));
            }
        }
    }

    @Test
    void paddingFiveHeadsToSixteenLeavesTheRealHeadsBitIdentical()
    {
        AttentionGeometry sixteen = new AttentionGeometry(KvLayout.MLA, 16, 1, 72, 60, MLA.scale());
        AttentionGeometry five = new AttentionGeometry(KvLayout.MLA, 5, 1, 72, 60, MLA.scale());
        try (Arena arena = Arena.ofShared()) {
            LatentPool full = new LatentPool(arena, sixteen, 16, KvDtype.BF16, 39, 600, 129, 1);
            LatentPool padded = new LatentPool(arena, five, 16, KvDtype.BF16, 39, 600, 129, 1);
            float[] fullDecode = full.decode(aiter(full), 0, 1, 2);
            float[] paddedDecode = padded.decode(aiter(padded), 0, 1, 2);
            for (int i = 0; i < 3; i++) {
                assertThat(padded.row(paddedDecode, i)).as("decode request %d", i).isEqualTo(full.heads(fullDecode, i, 5));
            }
            float[] fullExtend = full.prefill(aiter(full), 1);
            float[] paddedExtend = padded.prefill(aiter(padded), 1);
            for (int p = 0; p < 129; p++) {
                assertThat(padded.row(paddedExtend, p)).as("extend position %d", p).isEqualTo(full.heads(fullExtend, p, 5));
            }
        }
    }

    @Test
    void splitsSitEvery128AbsolutePositions()
    {
        try (Arena arena = Arena.ofShared()) {
            LatentPool pool = new LatentPool(arena, MLA, 16, KvDtype.F32, 40, 1);
            AttentionBackend backend = aiter(pool);
            assertThat(AiterAttention.SPLIT_TOKENS).isEqualTo(128);
            assertThat(IntStream.of(1, 127, 128, 129, 256, 257, 600).map(backend::numKvSplits).toArray()).containsExactly(1, 1, 1, 2, 2, 3, 5);
        }
    }
}
