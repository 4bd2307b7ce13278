package io.handoff.core.model;

import io.handoff.spi.attention.KvDtype;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Qwen2's q/k/v biases, Qwen3's per-head q/k RMSNorm and Llama 3.1's RoPE scaling (as configured, and as GGUF's per-frequency
 * divisors) on the tiny-gqa shape: the same function
 * as {@link NaiveTransformer}, and still batch-, chunk- and decode-invariant to the bit.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GqaVariantsTest
{
    /** Original context 64 so that positions a test reaches fall in every band of the remapping. */
    static final RopeScaling.Llama3 LLAMA3 = new RopeScaling.Llama3(8f, 1f, 4f, 64);

    private final Map<String, ModelConfig> configs = new HashMap<>();
    private final Map<String, Transformer> models = new HashMap<>();

    static ModelConfig variant(String name)
    {
        ModelConfig c = ModelConfig.byName("tiny-gqa");
        boolean bias = name.equals("qwen2-gqa");
        boolean norm = name.equals("qwen3-gqa");
        RopeScaling scaling = switch (name) {
            case "llama3-rope-gqa" -> LLAMA3;
            case "rope-divisors-gqa" -> divisors(LLAMA3, c.ropeTheta(), c.headDim());
            default -> RopeScaling.NONE;
        };
        return new ModelConfig(name, c.architecture(), c.vocabSize(), c.hiddenSize(), c.layers(), c.heads(), c.kvHeads(), c.headDim(), 0, 0, 0,
                0, 0, c.intermediateSize(), c.ropeTheta(), c.rmsEps(), c.maxContext(), c.weightsSeed(), false, "", bias, norm, scaling);
    }

    /** llama.cpp's converter: the divisor of pair {@code i} is the ratio of the plain to the remapped inverse frequency. */
    static RopeScaling.FrequencyDivisors divisors(RopeScaling.Llama3 scaling, double theta, int dim)
    {
        List<Float> divisors = new ArrayList<>();
        for (int i = 0; i < dim / 2; i++) {
            double inv = 1.0 / Math.pow(theta, 2.0 * i / dim);
            divisors.add((float) (inv / scaling.remap(inv)));
        }
        return new RopeScaling.FrequencyDivisors(divisors);
    }

    @BeforeAll
    void loadModels()
    {
        for (String name : new String[] {"qwen2-gqa", "qwen3-gqa", "llama3-rope-gqa", "rope-divisors-gqa"}) {
            ModelConfig config = variant(name);
            configs.put(name, config);
            models.put(name, new Transformer(config, new SyntheticWeights(config.weightsSeed()), 2));
        }
    }

    @AfterAll
    void closeModels()
    {
        models.values().forEach(Transformer::close);
    }

    private ModelHarness harness(String model, long slotSeed)
    {
        return new ModelHarness(models.get(model), KvDtype.F32, 64, slotSeed);
    }

    private static int[] randomTokens(int count, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        return IntStream.range(0, count).map(i -> random.nextInt(256)).toArray();
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen2-gqa", "qwen3-gqa", "llama3-rope-gqa", "rope-divisors-gqa"})
    void computesTheSameFunctionAsATextbookImplementation(String model)
    {
        ModelConfig config = configs.get(model);
        // past the original context's low-frequency wavelength (64 / low_freq_factor), so llama3 scaling is exercised
        int[] prompt = randomTokens(80, 61);
        double[][] expected = new NaiveTransformer(config, new SyntheticWeights(config.weightsSeed())).logits(prompt);
        try (ModelHarness h = harness(model, 22)) {
            float[][] actual = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
            for (int t = 0; t < prompt.length; t++) {
                for (int v = 0; v < config.vocabSize(); v++) {
                    assertThat((double) actual[t][v]).as("position %s token %s", t, v).isCloseTo(expected[t][v], within(5e-4));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen2-gqa", "qwen3-gqa", "llama3-rope-gqa", "rope-divisors-gqa"})
    void theFeatureChangesTheLogitsOfThePlainModel(String model)
    {
        int[] prompt = randomTokens(80, 62);
        float[][] plain;
        try (Transformer llama = new Transformer(ModelConfig.byName("tiny-gqa"), new SyntheticWeights(configs.get(model).weightsSeed()), 2);
                ModelHarness h = new ModelHarness(llama, KvDtype.F32, 16, 1)) {
            plain = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        try (ModelHarness h = harness(model, 1)) {
            float[][] actual = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
            double maxDifference = 0;
            for (int v = 0; v < actual[prompt.length - 1].length; v++) {
                maxDifference = Math.max(maxDifference, Math.abs(actual[prompt.length - 1][v] - plain[prompt.length - 1][v]));
            }
            assertThat(maxDifference).isGreaterThan(1e-2);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen2-gqa", "qwen3-gqa", "llama3-rope-gqa", "rope-divisors-gqa"})
    void logitsDoNotDependOnWhatTheRequestIsBatchedWith(String model)
    {
        int[] prompt = randomTokens(37, 11);
        float[][] alone;
        try (ModelHarness h = harness(model, 3)) {
            alone = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, h.allocate(prompt.length)));
        }
        try (ModelHarness h = harness(model, 4)) {
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
    @ValueSource(strings = {"qwen2-gqa", "qwen3-gqa", "llama3-rope-gqa", "rope-divisors-gqa"})
    void chunkedPrefillAndDecodeMatchOneExtendBitForBit(String model)
    {
        int[] sequence = randomTokens(150, 21);
        int promptLength = 140;
        try (ModelHarness whole = harness(model, 5);
                ModelHarness chunked = harness(model, 6);
                ModelHarness single = harness(model, 7)) {
            float[][] expected = whole.prefillAllPositions(sequence, whole.allocate(sequence.length), sequence.length);
            assertThat(single.prefillAllPositions(sequence, single.allocate(sequence.length), 1)).isDeepEqualTo(expected);
            int[] row = chunked.allocate(sequence.length);
            float[][] prefill = chunked.prefillAllPositions(Arrays.copyOf(sequence, promptLength), row, 64);
            assertThat(prefill).isDeepEqualTo(Arrays.copyOf(expected, promptLength));
            for (int position = promptLength; position < sequence.length; position++) {
                float[][] decoded = chunked.forward(ForwardBatch.builder().decode(sequence[position], position, row));
                assertThat(decoded[0]).as("position %s", position).isEqualTo(expected[position]);
            }
        }
    }

    @Test
    void llama3ScalingKeepsHighFrequenciesStretchesLowOnesAndBlendsBetween()
    {
        // wavelength 2π/inv: below 64/4 = 16 kept, above 64/1 = 64 divided by the factor 8
        assertThat(LLAMA3.remap(1.0)).isEqualTo(1.0);
        double low = 2 * Math.PI / 1000;
        assertThat(LLAMA3.remap(low)).isCloseTo(low / 8, within(1e-15));
        double middle = 2 * Math.PI / 32;
        // smooth = (64/32 - 1) / (4 - 1) = 1/3
        assertThat(LLAMA3.remap(middle)).isCloseTo((2.0 / 3) * middle / 8 + middle / 3, within(1e-15));
        assertThat(RopeScaling.NONE.remap(3, 8, 10000, 0.25)).isEqualTo(0.25);
    }
}
