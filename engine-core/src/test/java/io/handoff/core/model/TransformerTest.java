package io.handoff.core.model;

import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TransformerTest
{
    private static final List<String> TEXTS = List.of(
            "The quick brown fox", "Hello, world!", "def main():\n  return 42", "Once upon a time",
            "1 2 3 4 5 6", "Ünïcødé ☃ text", "SELECT * FROM t WHERE x = 1;", "lorem ipsum dolor sit amet");

    private final ByteTokenizer tokenizer = new ByteTokenizer();
    private Map<String, Transformer> models;

    @BeforeAll
    void loadModels()
    {
        models = Map.of(
                "tiny-mla", new Transformer(ModelConfig.byName("tiny-mla"), new SyntheticWeights(ModelConfig.byName("tiny-mla").weightsSeed()), 2),
                "tiny-gqa", new Transformer(ModelConfig.byName("tiny-gqa"), new SyntheticWeights(ModelConfig.byName("tiny-gqa").weightsSeed()), 2));
    }

    @AfterAll
    void closeModels()
    {
        models.values().forEach(Transformer::close);
    }

    private ModelHarness harness(String model, KvDtype dtype, long slotSeed)
    {
        return new ModelHarness(models.get(model), dtype, 64, slotSeed);
    }

    private static int[] randomTokens(int count, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        return IntStream.range(0, count).map(i -> random.nextInt(256)).toArray();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void sameInputGivesBitIdenticalLogits(String model)
    {
        int[] prompt = tokenizer.encode("determinism is the gate", true);
        float[][] first;
        float[][] second;
        try (ModelHarness h = harness(model, KvDtype.F32, 1)) {
            first = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        try (ModelHarness h = harness(model, KvDtype.F32, 2)) {
            second = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        assertThat(first).isDeepEqualTo(second);
        assertThat(first[0]).isNotEqualTo(first[1]);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void computesTheSameFunctionAsATextbookImplementation(String model)
    {
        ModelConfig config = ModelConfig.byName(model);
        int[] prompt = tokenizer.encode("Ünïcødé and MLA", true);
        double[][] expected = new NaiveTransformer(config, new SyntheticWeights(config.weightsSeed())).logits(prompt);
        try (ModelHarness h = harness(model, KvDtype.F32, 22)) {
            float[][] actual = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
            for (int t = 0; t < prompt.length; t++) {
                for (int v = 0; v < config.vocabSize(); v++) {
                    assertThat((double) actual[t][v]).as("position %s token %s", t, v).isCloseTo(expected[t][v], within(5e-4));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void logitsDoNotDependOnWhatTheRequestIsBatchedWith(String model)
    {
        int[] prompt = randomTokens(37, 11);
        float[][] alone;
        try (ModelHarness h = harness(model, KvDtype.F32, 3)) {
            alone = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        try (ModelHarness h = harness(model, KvDtype.F32, 4)) {
            // another request decodes in the same step: prefill it first
            int[] other = randomTokens(20, 12);
            int[] otherRow = h.allocate(21);
            h.forward(ForwardBatch.builder().extend(other, 0, otherRow));
            int[] before = randomTokens(5, 13);
            int[] after = randomTokens(90, 14);
            float[][] batched = h.forwardAllPositions(ForwardBatch.builder()
                    .extend(before, 0, h.allocate(before.length))
                    .extend(prompt, 0, h.allocate(prompt.length))
                    .extend(after, 0, h.allocate(after.length))
                    .decode(7, 20, otherRow));
            assertThat(Arrays.copyOfRange(batched, before.length, before.length + prompt.length)).isDeepEqualTo(alone);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void chunkedPrefillMatchesOneExtendBitForBitInLogitsAndKv(String model)
    {
        int[] prompt = randomTokens(300, 21);
        try (ModelHarness whole = harness(model, KvDtype.F32, 5);
                ModelHarness chunked = harness(model, KvDtype.F32, 6);
                ModelHarness single = harness(model, KvDtype.F32, 7)) {
            int[] wholeRow = whole.allocate(prompt.length);
            int[] chunkedRow = chunked.allocate(prompt.length);
            int[] singleRow = single.allocate(prompt.length);
            float[][] expected = whole.prefillAllPositions(prompt, wholeRow, prompt.length);
            assertThat(chunked.prefillAllPositions(prompt, chunkedRow, 64)).isDeepEqualTo(expected);
            assertThat(single.prefillAllPositions(prompt, singleRow, 1)).isDeepEqualTo(expected);
            for (int layer = 0; layer < whole.kv.layers(); layer++) {
                for (int position = 0; position < prompt.length; position++) {
                    assertThat(keyRow(chunked, layer, chunkedRow[position])).isEqualTo(keyRow(whole, layer, wholeRow[position]));
                    assertThat(keyRow(single, layer, singleRow[position])).isEqualTo(keyRow(whole, layer, wholeRow[position]));
                    assertThat(valueRow(single, layer, singleRow[position])).isEqualTo(valueRow(whole, layer, wholeRow[position]));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void decodeAfterPrefillMatchesExtendOfTheWholeSequence(String model)
    {
        int[] sequence = randomTokens(40, 31);
        int promptLength = 30;
        float[][] expected;
        try (ModelHarness h = harness(model, KvDtype.F32, 8)) {
            expected = h.prefillAllPositions(sequence, h.allocate(sequence.length), sequence.length);
        }
        try (ModelHarness h = harness(model, KvDtype.F32, 9)) {
            int[] row = h.allocate(sequence.length);
            float[][] prefill = h.forward(ForwardBatch.builder().extend(Arrays.copyOf(sequence, promptLength), 0, row));
            assertThat(prefill[0]).isEqualTo(expected[promptLength - 1]);
            for (int position = promptLength; position < sequence.length; position++) {
                float[][] decoded = h.forward(ForwardBatch.builder().decode(sequence[position], position, row));
                assertThat(decoded[0]).as("position %s", position).isEqualTo(expected[position]);
            }
        }
    }

    @Test
    void threadCountDoesNotChangeLogits()
    {
        ModelConfig config = ModelConfig.byName("tiny-mla");
        int[] prompt = randomTokens(70, 41);
        float[][] sequential;
        try (Transformer oneThread = new Transformer(config, new SyntheticWeights(config.weightsSeed()), 1);
                ModelHarness h = new ModelHarness(oneThread, KvDtype.F32, 16, 10)) {
            sequential = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        try (ModelHarness h = harness("tiny-mla", KvDtype.F32, 11)) {
            assertThat(h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)))).isDeepEqualTo(sequential);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void greedyGenerationIsVariedAndDiffersBetweenPrompts(String model)
    {
        List<int[]> prompts = TEXTS.stream().map(text -> tokenizer.encode(text, true)).toList();
        try (ModelHarness h = harness(model, KvDtype.F32, 12)) {
            List<int[]> outputs = h.generate(prompts, 24, 1024, 0);
            Set<Integer> distinct = new HashSet<>();
            outputs.forEach(output -> Arrays.stream(output).forEach(distinct::add));
            assertThat(outputs).allSatisfy(output -> assertThat(output).hasSize(24));
            assertThat(distinct).hasSizeGreaterThanOrEqualTo(20);
            assertThat(outputs.stream().map(Arrays::toString).distinct().count()).isEqualTo(prompts.size());
        }
    }

    @Test
    void continuousBatchingWithMixedStepsGeneratesWhatEachRequestGeneratesAlone()
    {
        List<int[]> prompts = TEXTS.subList(0, 4).stream().map(text -> tokenizer.encode(text, true)).toList();
        List<int[]> alone = new ArrayList<>();
        try (ModelHarness h = harness("tiny-gqa", KvDtype.F32, 13)) {
            for (int[] prompt : prompts) {
                alone.add(h.generate(List.of(prompt), 8, 1024, 0).getFirst());
            }
        }
        try (ModelHarness h = harness("tiny-gqa", KvDtype.F32, 14)) {
            // arrivals two steps apart with 5-token chunks: steps mix chunks of some requests with decodes of others
            List<int[]> batched = h.generate(prompts, 8, 5, 2);
            assertThat(batched).zipSatisfy(alone, (b, a) -> assertThat(b).isEqualTo(a));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void corruptedPrefixKvRowChangesTheGreedyOutput(String model)
    {
        int[] prompt = tokenizer.encode("A corrupted prefix must not go unnoticed.", true);
        int[] clean;
        int[] corrupted;
        try (ModelHarness h = harness(model, KvDtype.F32, 15)) {
            clean = greedyAfterPrefill(h, prompt, 16, -1);
        }
        try (ModelHarness h = harness(model, KvDtype.F32, 15)) {
            corrupted = greedyAfterPrefill(h, prompt, 16, 5);
        }
        assertThat(corrupted).isNotEqualTo(clean);
    }

    /** Prefills, optionally negates layer 0's K and V rows of {@code corruptPosition} (as a torn transfer would), then decodes greedily. */
    private static int[] greedyAfterPrefill(ModelHarness h, int[] prompt, int count, int corruptPosition)
    {
        int[] row = h.allocate(prompt.length + count);
        int[] output = new int[count];
        output[0] = Sampler.argmax(h.forward(ForwardBatch.builder().extend(prompt, 0, row))[0]);
        if (corruptPosition >= 0) {
            int slot = row[corruptPosition];
            float[] key = negated(keyRow(h, 0, slot));
            float[] value = negated(valueRow(h, 0, slot));
            KvRows.store(h.kv.keys(0), slot * h.kv.keyRowBytes(), h.kv.dtype(), key, 0, key.length);
            if (!h.kv.valuesInKeyRow()) {
                KvRows.store(h.kv.values(0), slot * h.kv.valueRowBytes(), h.kv.dtype(), value, 0, value.length);
            }
        }
        for (int i = 1; i < count; i++) {
            output[i] = Sampler.argmax(h.forward(ForwardBatch.builder().decode(output[i - 1], prompt.length + i - 1, row))[0]);
        }
        return output;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void bf16PoolStoresRoundedRowsAndStaysChunkAndDecodeInvariant(String model)
    {
        int[] sequence = randomTokens(48, 51);
        float[][] f32;
        try (ModelHarness h = harness(model, KvDtype.F32, 16)) {
            f32 = h.prefillAllPositions(sequence, h.allocate(sequence.length), sequence.length);
        }
        try (ModelHarness whole = harness(model, KvDtype.BF16, 17);
                ModelHarness chunked = harness(model, KvDtype.BF16, 18)) {
            int[] wholeRow = whole.allocate(sequence.length);
            float[][] expected = whole.prefillAllPositions(sequence, wholeRow, sequence.length);
            int[] chunkedRow = chunked.allocate(sequence.length);
            chunked.prefillAllPositions(Arrays.copyOf(sequence, 40), chunkedRow, 16);
            for (int position = 40; position < sequence.length; position++) {
                float[][] decoded = chunked.forward(ForwardBatch.builder().decode(sequence[position], position, chunkedRow));
                assertThat(decoded[0]).isEqualTo(expected[position]);
            }
            // rounding the KV to BF16 changes the numbers (so the BF16 path is really taken) but not the gist
            assertThat(expected[sequence.length - 1]).isNotEqualTo(f32[sequence.length - 1]);
            assertThat(Sampler.argmax(expected[sequence.length - 1])).isEqualTo(Sampler.argmax(f32[sequence.length - 1]));
            float[] key = keyRow(whole, whole.kv.layers() - 1, wholeRow[3]);
            for (float value : key) {
                assertThat(KvRows.roundToBf16(value)).isEqualTo(value);
            }
            List<int[]> generated = whole.generate(TEXTS.stream().map(text -> tokenizer.encode(text, true)).toList(), 8, 1024, 0);
            assertThat(generated.stream().flatMapToInt(Arrays::stream).distinct().count()).isGreaterThanOrEqualTo(10);
        }
    }

    @Test
    void hookRunsAfterEveryLayerInOrder()
    {
        List<Integer> layers = new ArrayList<>();
        try (ModelHarness h = harness("tiny-mla", KvDtype.F32, 19)) {
            int[] prompt = tokenizer.encode("hook", true);
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)).build(h.attention::numKvSplits);
            h.model.forward(batch, h.kv, h.attention, layers::add);
        }
        assertThat(layers).containsExactly(0, 1, 2, 3);
    }

    @Test
    void rejectsAPoolShapedForAnotherModel()
    {
        try (ModelHarness gqa = harness("tiny-gqa", KvDtype.F32, 20)) {
            int[] prompt = tokenizer.encode("x", true);
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, gqa.allocate(prompt.length)).build(gqa.attention::numKvSplits);
            assertThatThrownBy(() -> models.get("tiny-mla").forward(batch, gqa.kv, gqa.attention, Transformer.LayerHook.NONE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("does not fit model 'tiny-mla'");
        }
    }

    private static float[] negated(float[] row)
    {
        for (int i = 0; i < row.length; i++) {
            row[i] = -row[i];
        }
        return row;
    }

    private static float[] keyRow(ModelHarness h, int layer, int slot)
    {
        float[] row = new float[h.kv.keyRowElements()];
        KvRows.load(h.kv.keys(layer), slot * h.kv.keyRowBytes(), h.kv.dtype(), row, 0, row.length);
        return row;
    }

    private static float[] valueRow(ModelHarness h, int layer, int slot)
    {
        float[] row = new float[h.kv.valueRowElements()];
        KvRows.load(h.kv.values(layer), slot * h.kv.valueRowBytes(), h.kv.dtype(), row, 0, row.length);
        return row;
    }
}
