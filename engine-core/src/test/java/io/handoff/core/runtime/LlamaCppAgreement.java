package io.handoff.core.runtime;

import io.handoff.core.fault.FaultInjector;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.prefix.ChunkCache;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.KvHandoff;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.core.scheduler.SchedulerConfig;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the llama.cpp agreement tests compare: llama.cpp's greedy run on a GGUF file, Handoff's greedy run on a model path
 * as a server runs it (ModelSource, Transformer, Scheduler, {@link ReferenceAttention}), and the rule that judges the two.
 *
 * <p>The two compute in different orders and llama.cpp rounds more (see {@link #tolerance}), so logits differ a little
 * and ids may part where two logits are nearly equal. At every step both saw the same ids, llama.cpp's 8 best tokens
 * must stand in Handoff's logits as in llama.cpp's within the tolerance; the ids must be equal up to the first
 * difference, and there llama.cpp's token must be within the tolerance of Handoff's best in Handoff's own logits; after it
 * the texts differ and nothing more is compared.
 */
final class LlamaCppAgreement
{
    private LlamaCppAgreement() {}

    /**
     * How far Handoff's logits may be from llama.cpp's, by what llama.cpp rounds that Handoff does not (measured on the seeded
     * Llama files: 0.00003, 0.027, 0.071 and 0.93):
     * <ul>
     * <li>F32 weights, F32 KV: only the order of summation differs: 0.001.
     * <li>F32 weights, F16 KV: llama.cpp's flash attention also sums softmax-weighted values in F16: 0.05.
     * <li>F16 weights: llama.cpp also rounds every matmul's activations to F16: 0.15.
     * <li>Q8_0 weights: llama.cpp quantizes every matmul's activations to 8 bits per block of 32: 1.5.
     * </ul>
     */
    /**
     * Block-quantized weights with quantized activations on both sides: the rounding is the same, but an input value
     * at a rounding boundary may land on either side of it after a different summation order upstream, which moves logits
     * by up to a few tenths on random weights (measured on the seeded files: 0.00001 for Q4_K_M and Q6_K, 0.09 for Q4_0, 0.30
     * for Q5_K_M, 0.42 for Q8_0 with an F16 cache).
     */
    static final double QUANTIZED_ACTIVATIONS_TOLERANCE = 1.5;

    static double tolerance(GgufTensorType weights, KvDtype kv)
    {
        return switch (weights) {
            case F32 -> kv == KvDtype.F32 ? 0.001 : 0.05;
            case F16 -> 0.15;
            case Q8_0 -> 1.5;
            default -> throw new IllegalArgumentException("no tolerance for " + weights + " weights");
        };
    }

    /**
     * llama.cpp's greedy run of every prompt on {@code gguf}, in one node process: with an F16 KV cache its defaults
     * (flash attention on a CPU), with an F32 one flash attention off, which would round values to F16 again.
     */
    static LlamaCppReference.Generation reference(Path gguf, List<String> prompts, int tokens, KvDtype kv)
            throws Exception
    {
        return kv == KvDtype.F16
                ? LlamaCppReference.greedy(gguf, prompts, tokens, "F16", "auto")
                : LlamaCppReference.greedy(gguf, prompts, tokens, "F32", "false");
    }

    /**
     * Handoff's greedy {@code results} against llama.cpp's {@code expected} for the same prompts, asserted as the class says;
     * prints a summary and returns how many ids were equal before the first differences.
     */
    static int compare(String label, List<String> prompts, int tokens, LlamaCppReference.Generation expected, List<GenerateResult> results,
            double tolerance)
    {
        int equal = 0;
        int wholeOutputs = 0;
        double disagreement = 0;
        List<String> divergences = new ArrayList<>();
        for (int p = 0; p < prompts.size(); p++) {
            int[] handoff = results.get(p).outputIds();
            int[] llamaCpp = expected.outputs().get(p);
            assertThat(llamaCpp).as("llama.cpp's output for '%s'", prompts.get(p)).hasSize(tokens);
            int first = Arrays.mismatch(handoff, llamaCpp);
            // up to and at the first difference both saw the same ids, so their logits are comparable
            for (int step = 0; step <= (first < 0 ? tokens - 1 : first); step++) {
                double apart = disagreement(results.get(p).logits().get(step), expected.top().get(p).get(step));
                assertThat(apart).as("%s: '%s' step %d, logits of llama.cpp's best tokens, Handoff against llama.cpp", label, prompts.get(p), step)
                        .isLessThanOrEqualTo(tolerance);
                disagreement = Math.max(disagreement, apart);
            }
            if (first < 0) {
                equal += tokens;
                wholeOutputs++;
                continue;
            }
            equal += first;
            float[] logits = results.get(p).logits().get(first);
            float gap = logits[handoff[first]] - logits[llamaCpp[first]];
            divergences.add(String.format("'%s' parts at token %d: Handoff %d, llama.cpp %d, %.5f apart in Handoff's logits",
                    prompts.get(p), first, handoff[first], llamaCpp[first], gap));
            assertThat((double) gap).as("%s: at the first difference for '%s', llama.cpp's token is a near-tie in Handoff's logits "
                    + "(Handoff %s, llama.cpp %s)", label, prompts.get(p), Arrays.toString(handoff), Arrays.toString(llamaCpp))
                    .isLessThanOrEqualTo(tolerance);
        }
        System.out.printf("greedy against llama.cpp, %s: %d of %d ids equal, %d of %d outputs whole, logits of llama.cpp's 8 best tokens "
                        + "(relative to its best) at most %.5f apart (tolerance %s)%s%n", label, equal, prompts.size() * tokens, wholeOutputs,
                prompts.size(), disagreement, tolerance, divergences.isEmpty() ? "" : "; " + divergences);
        return equal;
    }

    /**
     * How far Handoff's logits are from llama.cpp's at one step: for each of llama.cpp's best tokens, its logit less that
     * of llama.cpp's best, in Handoff's logits and in llama.cpp's (log-probabilities differ as logits do); the largest gap.
     */
    private static double disagreement(float[] logits, List<LlamaCppReference.Candidate> top)
    {
        double most = 0;
        for (LlamaCppReference.Candidate c : top) {
            double ours = logits[c.token()] - logits[top.getFirst().token()];
            double theirs = c.logProbability() - top.getFirst().logProbability();
            most = Math.max(most, Math.abs(ours - theirs));
        }
        return most;
    }

    /**
     * Handoff's greedy outputs (with every step's logits) for {@code prompts} on the model at {@code path} (a GGUF file or a
     * Hugging Face directory), its prompt ids checked to be {@code expectedPrompts}, all in one scheduler.
     */
    static List<GenerateResult> generate(Path path, KvDtype dtype, List<String> prompts, List<int[]> expectedPrompts, int tokens)
            throws Exception
    {
        return generate(path, dtype, prompts, expectedPrompts, tokens, true);
    }

    /** {@link #generate}, a GGUF file's quantized matrices rounding their inputs as llama.cpp does or ({@code false}) multiplying them exactly. */
    static List<GenerateResult> generate(Path path, KvDtype dtype, List<String> prompts, List<int[]> expectedPrompts, int tokens,
            boolean quantizedActivations)
            throws Exception
    {
        try (ModelSource source = ModelSource.open(path, 512, quantizedActivations)) {
            for (int p = 0; p < prompts.size(); p++) {
                assertThat(source.tokenizer().encodePrompt(prompts.get(p))).as("prompt ids of '%s' (%s)", prompts.get(p), path.getFileName())
                        .containsExactly(expectedPrompts.get(p));
            }
            ModelConfig config = source.config();
            try (Transformer model = new Transformer(config, source.weights(), 2);
                    KvPool kv = KvPool.allocate(KvGeometry.of(config.attentionGeometry(), config.layers(), dtype, 16), 64);
                    Scheduler scheduler = new Scheduler(new SchedulerConfig(8, 4096, 64, false, 2), model, kv, new ChunkCache(16),
                            new ReferenceAttention(config.attentionGeometry(), kv.view()), FaultInjector.NONE, KvHandoff.NONE,
                            source.tokenizer().eosTokenIds())) {
                List<RequestHandle> handles = new ArrayList<>();
                for (int p = 0; p < prompts.size(); p++) {
                    handles.add(scheduler.submit(new GenerateRequest("p" + p, expectedPrompts.get(p), tokens, SamplingParams.GREEDY, Set.of(),
                            true, true), TokenListener.NONE));
                }
                List<GenerateResult> results = new ArrayList<>();
                for (RequestHandle handle : handles) {
                    GenerateResult result = handle.result().get(60, TimeUnit.SECONDS);
                    assertThat(result.error()).as("request " + result.rid()).isEmpty();
                    results.add(result);
                }
                return results;
            }
        }
    }
}
