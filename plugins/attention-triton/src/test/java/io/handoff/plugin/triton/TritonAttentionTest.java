package io.handoff.plugin.triton;

import io.handoff.math.ExactExp;
import io.handoff.plugin.triton.KvFixture.Step;
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
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Accuracy against {@link ReferenceAttention} and bit-exact invariance. Tolerance: the maximum absolute
 * difference from the double-precision reference is at most {@value #TOLERANCE} for F32, BF16 and F16 KV
 * (the reference reads the same 16-bit values), with KV in [-1, 1] and queries in [-2, 2].
 */
class TritonAttentionTest
{
    /** The exps come from ExactExp's vector lanes, not its cold-start scalar path: wait until they are compiled. */
    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

    static final float TOLERANCE = 2e-6f;
    private static final int[] RAGGED = {1, 7, 255, 256, 257, 600};

    /** DeepSeek-like absorbed MLA with small, non-power-of-two dims: latent 60 + rope 12. */
    static final AttentionGeometry MLA = new AttentionGeometry(KvLayout.MLA, 8, 1, 72, 60, (float) (1 / Math.sqrt(72)));
    static final AttentionGeometry GQA = new AttentionGeometry(KvLayout.GQA, 8, 2, 40, 40, (float) (1 / Math.sqrt(40)));
    static final AttentionGeometry MHA = new AttentionGeometry(KvLayout.MHA, 4, 4, 27, 27, (float) (1 / Math.sqrt(27)));
    private static final Map<String, AttentionGeometry> GEOMETRIES = Map.of("MLA", MLA, "GQA", GQA, "MHA", MHA);

    static Stream<Arguments> layoutsPageSizesAndDtypes()
    {
        List<Arguments> cases = new ArrayList<>();
        for (String layout : List.of("MLA", "GQA", "MHA")) {
            for (int pageSize : new int[] {1, 3, 16, 64}) {
                for (KvDtype dtype : KvDtype.values()) {
                    cases.add(Arguments.of(layout, pageSize, dtype));
                }
            }
        }
        return cases.stream();
    }

    static AttentionBackend triton(KvFixture fixture)
    {
        return new TritonProvider().create(fixture.geometry, fixture.kv, PluginSettings.empty("triton"));
    }

    @ParameterizedTest(name = "{0}, page size {1}, {2}")
    @MethodSource("layoutsPageSizesAndDtypes")
    void decodeOfARaggedBatchMatchesTheReference(String layout, int pageSize, KvDtype dtype)
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), pageSize, dtype, 11, RAGGED);
            Step step = fixture.decode(triton(fixture), 3, 0, 5, 1, 4, 2);
            float[] actual = fixture.run(triton(fixture), step);
            float[] expected = fixture.run(new ReferenceAttention(fixture.geometry, fixture.kv), step);
            assertThat(KvFixture.maxAbsDifference(actual, expected)).isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @ParameterizedTest(name = "{0}, page size {1}, {2}")
    @MethodSource("layoutsPageSizesAndDtypes")
    void extendOfARaggedBatchWithPrefixesMatchesTheReference(String layout, int pageSize, KvDtype dtype)
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), pageSize, dtype, 12, 1, 7, 300, 270);
            // Whole prompts, a chunk that crosses the 256 boundary after a cached prefix, and one that starts on it.
            Step step = fixture.extend(new int[] {0, 1, 2, 3}, new int[] {0, 0, 240, 256}, new int[] {1, 7, 300, 270});
            float[] actual = fixture.run(triton(fixture), step);
            float[] expected = fixture.run(new ReferenceAttention(fixture.geometry, fixture.kv), step);
            assertThat(KvFixture.maxAbsDifference(actual, expected)).isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"F32", "BF16", "F16"})
    void mlaAtDeepSeekDimsMatchesTheReference(KvDtype dtype)
    {
        // kv_lora_rank 512 + rope 64, 16 heads: the shape the absorbed kernels are written for.
        AttentionGeometry deepSeek = new AttentionGeometry(KvLayout.MLA, 16, 1, 576, 512, (float) (1 / Math.sqrt(192)));
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, deepSeek, 64, dtype, 19, 600, 257);
            Step decode = fixture.decode(triton(fixture), 0, 1);
            assertThat(KvFixture.maxAbsDifference(fixture.run(triton(fixture), decode),
                    fixture.run(new ReferenceAttention(deepSeek, fixture.kv), decode))).isLessThanOrEqualTo(TOLERANCE);
            Step extend = fixture.extend(new int[] {1}, new int[] {250}, new int[] {257});
            assertThat(KvFixture.maxAbsDifference(fixture.run(triton(fixture), extend),
                    fixture.run(new ReferenceAttention(deepSeek, fixture.kv), extend))).isLessThanOrEqualTo(TOLERANCE);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"MLA", "GQA"})
    void decodeAndExtendAreBitIdenticalAcrossRunsAndThreadCounts(String layout)
            throws Exception
    {
        try (Arena arena = Arena.ofShared(); ForkJoinPool one = new ForkJoinPool(1); ForkJoinPool three = new ForkJoinPool(3)) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), 16, KvDtype.BF16, 13, RAGGED);
            AttentionBackend backend = triton(fixture);
            Step decode = fixture.decode(backend, 0, 1, 2, 3, 4, 5);
            Step extend = fixture.prefill(2, 5);
            float[] decoded = fixture.run(backend, decode);
            float[] extended = fixture.run(backend, extend);
            assertThat(fixture.run(backend, decode)).isEqualTo(decoded);
            assertThat(one.submit(() -> fixture.run(backend, decode)).get()).isEqualTo(decoded);
            assertThat(three.submit(() -> fixture.run(backend, decode)).get()).isEqualTo(decoded);
            assertThat(one.submit(() -> fixture.run(backend, extend)).get()).isEqualTo(extended);
            assertThat(three.submit(() -> fixture.run(backend, extend)).get()).isEqualTo(extended);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"MLA", "GQA"})
    void decodeOfARequestAloneIsBitIdenticalToDecodeInABatchOf32(String layout)
    {
        Random random = new Random(14);
        int[] lengths = new int[32];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = i < RAGGED.length ? RAGGED[i] : 1 + random.nextInt(600);
        }
        int[] batchOrder = shuffled(lengths.length, random);
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), 16, KvDtype.F32, 14, lengths);
            AttentionBackend backend = triton(fixture);
            float[] batched = fixture.run(backend, fixture.decode(backend, batchOrder));
            for (int i = 0; i < batchOrder.length; i++) {
                float[] alone = fixture.run(backend, fixture.decode(backend, batchOrder[i]));
                assertThat(fixture.row(batched, i)).as("request %d (seq_len %d)", batchOrder[i], lengths[batchOrder[i]]).isEqualTo(alone);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"MLA", "GQA"})
    void extendOfAPromptAloneIsBitIdenticalToExtendInABatch(String layout)
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), 3, KvDtype.BF16, 15, 280, 9, 600, 33);
            AttentionBackend backend = triton(fixture);
            float[] alone = fixture.run(backend, fixture.prefill(0));
            float[] batched = fixture.run(backend, fixture.extend(new int[] {1, 0, 2, 3}, new int[] {0, 0, 500, 0}, new int[] {9, 280, 600, 33}));
            for (int p = 0; p < 280; p++) {
                assertThat(fixture.row(batched, 9 + p)).as("position %d", p).isEqualTo(fixture.row(alone, p));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {64, 17, 1})
    void extendIsBitIdenticalWhateverThePromptsChunking(int chunk)
    {
        for (AttentionGeometry geometry : List.of(MLA, GQA)) {
            try (Arena arena = Arena.ofShared()) {
                KvFixture fixture = KvFixture.create(arena, geometry, 16, KvDtype.BF16, 16, 300);
                AttentionBackend backend = triton(fixture);
                float[] whole = fixture.run(backend, fixture.prefill(0));
                for (int from = 0; from < 300; from += chunk) {
                    int to = Math.min(from + chunk, 300);
                    float[] part = fixture.run(backend, fixture.extend(new int[] {0}, new int[] {from}, new int[] {to}));
                    for (int p = from; p < to; p++) {
                        assertThat(fixture.row(part, p - from)).as("%s position %d in chunk %d", geometry.layout(), p, from).isEqualTo(fixture.row(whole, p));
                    }
                }
            }
        }
    }

    /**
     * A decode task loads a split's rows of all the KV heads at once, or of one head where that would leave too few tasks
     * for the pool's threads: each head's result is the same bits either way, and equal to extend of the same position
     * (whose tiles hold one head), in every KV element type.
     */
    @ParameterizedTest
    @EnumSource(KvDtype.class)
    void decodeIsBitIdenticalWhetherATaskLoadsOneKvHeadOrAll(KvDtype dtype)
            throws Exception
    {
        for (String layout : List.of("GQA", "MHA")) {
            AttentionGeometry geometry = GEOMETRIES.get(layout);
            try (Arena arena = Arena.ofShared(); ForkJoinPool one = new ForkJoinPool(1); ForkJoinPool many = new ForkJoinPool(64)) {
                KvFixture fixture = KvFixture.create(arena, geometry, 16, dtype, 18, RAGGED);
                TritonAttention backend = (TritonAttention) triton(fixture);
                Step decode = fixture.decode(backend, 0, 1, 2, 3, 4, 5);
                int splits = IntStream.of(RAGGED).map(backend::numKvSplits).sum();
                assertThat(one.submit(() -> backend.tileHeads(splits)).get()).isEqualTo(geometry.numKvHeads());
                assertThat(many.submit(() -> backend.tileHeads(splits)).get()).isEqualTo(1);
                float[] allHeads = one.submit(() -> fixture.run(backend, decode)).get();
                float[] oneHead = many.submit(() -> fixture.run(backend, decode)).get();
                assertThat(allHeads).as(layout).isEqualTo(oneHead);
                float[] extended = fixture.run(backend, fixture.prefill(0, 1, 2, 3, 4, 5));
                int row = 0;
                for (int s = 0; s < RAGGED.length; s++) {
                    row += RAGGED[s];
                    assertThat(fixture.row(allHeads, s)).as("%s seq_len %d", layout, RAGGED[s]).isEqualTo(fixture.row(extended, row - 1));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"MLA", "GQA", "MHA"})
    void decodeOfPositionPIsBitIdenticalToExtendOfPositionP(String layout)
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, GEOMETRIES.get(layout), 64, KvDtype.F32, 17, RAGGED);
            AttentionBackend backend = triton(fixture);
            float[] decoded = fixture.run(backend, fixture.decode(backend, 0, 1, 2, 3, 4, 5));
            float[] extended = fixture.run(backend, fixture.prefill(0, 1, 2, 3, 4, 5));
            int row = 0;
            for (int s = 0; s < RAGGED.length; s++) {
                row += RAGGED[s];
                assertThat(fixture.row(decoded, s)).as("seq_len %d", RAGGED[s]).isEqualTo(fixture.row(extended, row - 1));
            }
        }
    }

    @Test
    void splitsSitEvery256AbsolutePositions()
    {
        try (Arena arena = Arena.ofShared()) {
            KvFixture fixture = KvFixture.create(arena, MLA, 16, KvDtype.F32, 18, 1);
            AttentionBackend backend = triton(fixture);
            assertThat(TritonAttention.SPLIT_TOKENS).isEqualTo(256);
            assertThat(IntStream.of(1, 255, 256, 257, 512, 513, 600).map(backend::numKvSplits).toArray()).containsExactly(1, 1, 1, 2, 2, 3, 3);
        }
    }

    private static int[] shuffled(int n, Random random)
    {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = order[i];
            order[i] = order[j];
            order[j] = swap;
        }
        return order;
    }
}
