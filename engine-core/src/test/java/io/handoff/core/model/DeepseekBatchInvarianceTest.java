package io.handoff.core.model;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.hf.DeepseekHfConfig;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.SeededCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A request's logits on a DeepSeek checkpoint (MLA attention, mixture-of-experts layers after a dense one) are
 * bit-identical whether it runs alone or in a batch of 32 different requests, some extending their prompts and some
 * decoding, both while its prompt is prefilled and when it decodes: which experts the other tokens are routed to, and how
 * many tokens an expert runs on, does not change one bit of its output.
 */
class DeepseekBatchInvarianceTest
{
    private static final int BATCH = 32;

    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"V2", "V3"})
    void aRequestsLogitsAreTheSameAloneAndInABatchOf32MixedExtendAndDecode(String version)
    {
        Path directory = temp.resolve(version);
        Options options = version.equals("V2") ? Options.v2(21) : Options.v3(22).withYarn(true);
        SeededDeepseekCheckpoint.write(directory, options);
        Path file = directory.resolve(HfModelConfig.FILE);
        ModelConfig config = DeepseekHfConfig.parse(JsonFile.readObject(file, 1 << 20), file.toString()).toModelConfig(version, 4096, version);
        int[] prompt = tokens(29, 1);
        int next = 17;
        try (SafetensorsWeights weights = SafetensorsWeights.open(directory);
                Transformer model = new Transformer(config, weights, 2)) {
            float[][] aloneExtend;
            float[][] aloneDecode;
            try (ModelHarness h = new ModelHarness(model, KvDtype.F32, 128, 1)) {
                int[] row = h.allocate(prompt.length + 1);
                aloneExtend = h.forwardAllPositions(ForwardBatch.builder().extend(prompt, 0, row));
                aloneDecode = h.forwardAllPositions(ForwardBatch.builder().decode(next, prompt.length, row));
            }
            try (ModelHarness h = new ModelHarness(model, KvDtype.F32, 128, 2)) {
                // the others: half already prefilled, so that they decode beside the request's extend
                List<int[]> others = new ArrayList<>();
                List<int[]> rows = new ArrayList<>();
                for (int i = 0; i < BATCH - 1; i++) {
                    others.add(tokens(3 + 5 * i % 37, 100 + i));
                    rows.add(h.allocate(others.get(i).length + 2));
                }
                ForwardBatch.Builder warm = ForwardBatch.builder();
                for (int i = 0; i < BATCH - 1; i += 2) {
                    warm.extend(others.get(i), 0, rows.get(i));
                }
                h.forward(warm);

                int[] row = h.allocate(prompt.length + 1);
                ForwardBatch.Builder step = ForwardBatch.builder();
                // logits come back extends first, then decodes: the prompt's rows follow the extends added before it
                int before = 0;
                for (int i = 0; i < (BATCH - 1) / 2; i++) {
                    before += add(step, others, rows, i, 0);
                }
                step.extend(prompt, 0, row);
                for (int i = (BATCH - 1) / 2; i < BATCH - 1; i++) {
                    add(step, others, rows, i, 0);
                }
                float[][] batchedExtend = h.forwardAllPositions(step);
                assertThat(Arrays.copyOfRange(batchedExtend, before, before + prompt.length)).as("the prompt's logits at every position")
                        .isDeepEqualTo(aloneExtend);

                // now every other one decodes once more, around the request's decode
                ForwardBatch.Builder decode = ForwardBatch.builder();
                int ahead = 7; // every one decodes, so its row is its place in the builder
                for (int i = 0; i < BATCH - 1; i++) {
                    if (i == ahead) {
                        decode.decode(next, prompt.length, row);
                    }
                    add(decode, others, rows, i, 1);
                }
                float[][] batchedDecode = h.forwardAllPositions(decode);
                assertThat(batchedDecode[ahead]).as("the decode step's logits").containsExactly(aloneDecode[0]);
                assertThat(batchedDecode[ahead + 1]).as("another request's logits").isNotEqualTo(aloneDecode[0]);
            }
        }
    }

    /**
     * Adds other request {@code i} to {@code step}: the even ones (prefilled by the warm-up) decode at their next position,
     * the odd ones extend their prompts ({@code round} 0) or decode after them ({@code round} 1). Returns how many extend rows it
     * added (a decode's row comes after every extend's).
     */
    private static int add(ForwardBatch.Builder step, List<int[]> others, List<int[]> rows, int i, int round)
    {
        int[] tokens = others.get(i);
        if (i % 2 == 0) {
            step.decode(40 + i, tokens.length + round, rows.get(i));
            return 0;
        }
        if (round == 0) {
            step.extend(tokens, 0, rows.get(i));
            return tokens.length;
        }
        step.decode(60 + i, tokens.length, rows.get(i));
        return 0;
    }

    private static int[] tokens(int count, long seed)
    {
        SplittableRandom random = new SplittableRandom(seed);
        return IntStream.range(0, count).map(i -> random.nextInt(SeededCheckpoint.VOCAB_SIZE)).toArray();
    }
}
