package io.handoff.testkit.model;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.model.hf.SafetensorsWeights;
import io.handoff.core.model.hf.TensorDtype;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.SplittableRandom;
import java.util.function.IntToDoubleFunction;

import static java.util.Objects.requireNonNull;

/**
 * Writes a small DeepSeek-V2 or V3 checkpoint directory with seeded weights, laid out as the original checkpoints are:
 * {@code config.json} with their keys, {@code generation_config.json}, a {@code model.safetensors} (F32, F16 or BF16) with
 * their tensor names (per-expert {@code mlp.experts.E.*}, {@code mlp.shared_experts.*}, {@code kv_a_proj_with_mqa},
 * {@code kv_b_proj}, ...), and either {@link SeededCheckpoint}'s byte-level tokenizer or a real tokenizer's files with the
 * model's vocabulary padded to a given size.
 *
 * <p>The weights are drawn for wide greedy margins, so that two correct implementations rarely meet a near tie: queries
 * and the rope key at {@code 3/sqrt(fan-in)}, the key half of {@code kv_b_proj} at {@code 3/sqrt(kv_lora_rank)}, the router
 * at {@code 2/sqrt(hidden)}, {@code lm_head} at {@code 4/sqrt(hidden)}, embeddings at 1, norms near 1, the rest at
 * {@code 1/sqrt(fan-in)}. Each tensor is uniform, drawn from its own generator seeded by the seed and its name, so
 * {@link #tensors} gives the same values whatever else is written and a second writer (a GGUF of the same weights) reads
 * them from there.
 */
public final class SeededDeepseekCheckpoint
{
    public static final int HIDDEN = 64;
    public static final int LAYERS = 3;
    public static final int HEADS = 4;
    public static final int KV_LORA_RANK = 32;
    public static final int QK_NOPE_HEAD_DIM = 32;
    public static final int QK_ROPE_HEAD_DIM = 16;
    /** Unequal to {@link #QK_NOPE_HEAD_DIM}, so that a loader confusing the key and value halves of kv_b_proj fails. */
    public static final int V_HEAD_DIM = 24;
    public static final int DENSE_FFN = 128;
    public static final int EXPERT_FFN = 32;
    public static final float RMS_EPS = 1e-6f;
    public static final float ROPE_THETA = 10000f;
    public static final int CONTEXT = 4096;
    /** V3's group-limited routing: experts in 4 groups, a token's experts from the best 2. */
    public static final int V3_GROUPS = 4;
    public static final int V3_GROUPS_PER_TOKEN = 2;
    public static final float V3_ROUTED_SCALING_FACTOR = 2.5f;
    /** YaRN as the real checkpoints configure it: factor 40 over an original 4096 positions. */
    public static final float YARN_FACTOR = 40f;

    /** DeepSeek-V2's routing (softmax, top-k over all experts, weights not normalized) or V3's (sigmoid, bias, groups). */
    public enum Version
    {
        V2("DeepseekV2ForCausalLM", "deepseek_v2"),
        V3("DeepseekV3ForCausalLM", "deepseek_v3");

        private final String architecture;
        private final String modelType;

        Version(String architecture, String modelType)
        {
            this.architecture = architecture;
            this.modelType = modelType;
        }

        public String architecture()
        {
            return architecture;
        }
    }

    /**
     * What to write.
     *
     * @param qLoraRank 0 for a plain {@code q_proj}, else the low-rank query's width
     * @param firstDenseLayers the leading dense layers ({@code first_k_dense_replace}), at most {@link #LAYERS}
     * @param sharedExperts at least 1 (llama.cpp's deepseek2 needs shared experts)
     * @param yarn YaRN RoPE scaling as the real configs have it ({@link #YARN_FACTOR}, mscale 0.707 for V2 and 1 for V3)
     * @param dtype how {@code model.safetensors} stores every tensor
     * @param tokenizer a directory with a real {@code tokenizer.json} (and {@code tokenizer_config.json}) to copy, or empty
     *         for the byte-level tokenizer
     * @param vocabSize the model's vocabulary, at least the tokenizer's; 0 for the tokenizer's own size
     */
    public record Options(long seed, Version version, int qLoraRank, int firstDenseLayers, int experts, int expertsPerToken, int sharedExperts,
                          boolean yarn, TensorDtype dtype, Optional<Path> tokenizer, int vocabSize)
    {
        public Options
        {
            requireNonNull(version, "version is null");
            requireNonNull(dtype, "dtype is null");
            requireNonNull(tokenizer, "tokenizer is null");
            if (qLoraRank < 0 || vocabSize < 0) {
                throw new IllegalArgumentException("qLoraRank " + qLoraRank + " and vocabSize " + vocabSize + " must be 0 or more");
            }
            if (firstDenseLayers < 0 || firstDenseLayers > LAYERS) {
                throw new IllegalArgumentException("firstDenseLayers is " + firstDenseLayers + "; it must lie from 0 to " + LAYERS);
            }
            if (sharedExperts < 1) {
                throw new IllegalArgumentException("sharedExperts is " + sharedExperts + "; llama.cpp's deepseek2 needs at least 1");
            }
            if (version == Version.V3 && (experts % V3_GROUPS != 0 || experts / V3_GROUPS < 2)) {
                throw new IllegalArgumentException("V3 routes over " + V3_GROUPS + " groups of at least 2 experts (a group scores by its "
                        + "best two); experts must be a multiple of " + V3_GROUPS + " from " + 2 * V3_GROUPS + ", was " + experts);
            }
        }

        /** DeepSeek-V2-Lite's kind: plain q_proj, one dense layer, 8 experts of which 2 per token, one shared, no YaRN, F32. */
        public static Options v2(long seed)
        {
            return new Options(seed, Version.V2, 0, 1, 8, 2, 1, false, TensorDtype.F32, Optional.empty(), 0);
        }

        /** DeepSeek-V3's kind: low-rank queries (rank 32), one dense layer, 8 experts in 4 groups, 2 per token, one shared. */
        public static Options v3(long seed)
        {
            return new Options(seed, Version.V3, 32, 1, 8, 2, 1, false, TensorDtype.F32, Optional.empty(), 0);
        }

        public Options withQLoraRank(int rank)
        {
            return new Options(seed, version, rank, firstDenseLayers, experts, expertsPerToken, sharedExperts, yarn, dtype, tokenizer, vocabSize);
        }

        public Options withFirstDenseLayers(int layers)
        {
            return new Options(seed, version, qLoraRank, layers, experts, expertsPerToken, sharedExperts, yarn, dtype, tokenizer, vocabSize);
        }

        public Options withExperts(int routed, int perToken, int shared)
        {
            return new Options(seed, version, qLoraRank, firstDenseLayers, routed, perToken, shared, yarn, dtype, tokenizer, vocabSize);
        }

        public Options withYarn(boolean on)
        {
            return new Options(seed, version, qLoraRank, firstDenseLayers, experts, expertsPerToken, sharedExperts, on, dtype, tokenizer, vocabSize);
        }

        public Options withDtype(TensorDtype type)
        {
            return new Options(seed, version, qLoraRank, firstDenseLayers, experts, expertsPerToken, sharedExperts, yarn, type, tokenizer, vocabSize);
        }

        /** A real tokenizer's directory, and the model's vocabulary size (0: the tokenizer's). */
        public Options withTokenizer(Path directory, int vocab)
        {
            return new Options(seed, version, qLoraRank, firstDenseLayers, experts, expertsPerToken, sharedExperts, yarn, dtype,
                    Optional.of(directory), vocab);
        }
    }

    /** One tensor: its row-major shape (a linear layer is {@code [out, in]}) and values. */
    public record Tensor(int[] shape, float[] values)
    {
        public Tensor
        {
            requireNonNull(shape, "shape is null");
            requireNonNull(values, "values is null");
            if (Arrays.stream(shape).asLongStream().reduce(1, Math::multiplyExact) != values.length) {
                throw new IllegalArgumentException(values.length + " values for shape " + Arrays.toString(shape));
            }
        }
    }

    /** The written vocabulary's size and special tokens. */
    public record Vocabulary(int size, int bos, int eos) {}

    private SeededDeepseekCheckpoint() {}

    /** Writes the checkpoint into {@code directory} (created if absent) and returns the configuration its config.json says. */
    public static DeepseekConfig write(Path directory, Options options)
    {
        requireNonNull(directory, "directory is null");
        requireNonNull(options, "options is null");
        Vocabulary vocabulary = vocabulary(options);
        DeepseekConfig config = config(options, vocabulary.size());
        SequencedMap<String, Tensor> tensors = tensors(config, options.seed());
        SequencedMap<String, int[]> shapes = new LinkedHashMap<>();
        tensors.forEach((name, tensor) -> shapes.put(name, tensor.shape()));
        try {
            Files.createDirectories(directory);
            Files.writeString(directory.resolve(HfModelConfig.FILE), configJson(config, options, vocabulary));
            Files.writeString(directory.resolve("generation_config.json"),
                    "{\"bos_token_id\": " + vocabulary.bos() + ", \"eos_token_id\": " + vocabulary.eos() + ", \"do_sample\": false}\n");
            Files.write(directory.resolve(SafetensorsWeights.SINGLE_FILE),
                    SafetensorsEncoder.encode(shapes, (name, shape) -> tensors.get(name).values(), options.dtype()));
            if (options.tokenizer().isPresent()) {
                for (String file : List.of("tokenizer.json", "tokenizer_config.json")) {
                    Path from = options.tokenizer().get().resolve(file);
                    if (Files.isRegularFile(from)) {
                        Files.copy(from, directory.resolve(file), StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            else {
                SeededCheckpoint.writeByteTokenizer(directory);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write a DeepSeek checkpoint to " + directory + ": " + e.getMessage(), e);
        }
        return config;
    }

    /** The configuration {@link #write} writes for {@code options}: {@link #LAYERS} layers of the fixed widths above. */
    public static DeepseekConfig config(Options options)
    {
        return config(options, vocabulary(options).size());
    }

    private static DeepseekConfig config(Options o, int vocabSize)
    {
        boolean v3 = o.version() == Version.V3;
        MoeConfig moe = new MoeConfig(o.experts(), o.expertsPerToken(), o.sharedExperts(), EXPERT_FFN,
                v3 ? MoeConfig.Scoring.SIGMOID : MoeConfig.Scoring.SOFTMAX, v3, v3 ? V3_GROUPS : 1, v3 ? V3_GROUPS_PER_TOKEN : 1,
                v3 ? MoeConfig.GroupScoring.TOP_TWO_SUM : MoeConfig.GroupScoring.MAX, v3, v3 ? V3_ROUTED_SCALING_FACTOR : 1f);
        float mscale = v3 ? 1f : 0.707f;
        RopeScaling rope = o.yarn() ? new RopeScaling.Yarn(YARN_FACTOR, CONTEXT, RopeScaling.Yarn.DEFAULT_BETA_FAST,
                RopeScaling.Yarn.DEFAULT_BETA_SLOW, mscale, mscale) : RopeScaling.NONE;
        int context = o.yarn() ? (int) (YARN_FACTOR * CONTEXT) : CONTEXT;
        return new DeepseekConfig(vocabSize, HIDDEN, LAYERS, HEADS, o.qLoraRank(), KV_LORA_RANK, QK_NOPE_HEAD_DIM, QK_ROPE_HEAD_DIM, V_HEAD_DIM,
                o.firstDenseLayers(), DENSE_FFN, moe, RMS_EPS, ROPE_THETA, rope, context, false);
    }

    /** The vocabulary {@link #write} writes: the byte-level tokenizer's, or the real tokenizer's padded to the requested size. */
    public static Vocabulary vocabulary(Options options)
    {
        if (options.tokenizer().isEmpty()) {
            return new Vocabulary(Math.max(SeededCheckpoint.VOCAB_SIZE, options.vocabSize()), SeededCheckpoint.BOS, SeededCheckpoint.EOS);
        }
        Path directory = options.tokenizer().get();
        Map<String, Object> tokenizer = JsonFile.readObject(directory.resolve("tokenizer.json"), 64 * 1024 * 1024);
        Map<String, Object> tokenizerConfig = Files.isRegularFile(directory.resolve("tokenizer_config.json"))
                ? JsonFile.readObject(directory.resolve("tokenizer_config.json"), 16 * 1024 * 1024) : Map.of();
        Map<String, Integer> added = new LinkedHashMap<>();
        int size = 0;
        if (tokenizer.get("model") instanceof Map<?, ?> model && model.get("vocab") instanceof Map<?, ?> vocab) {
            for (Object id : vocab.values()) {
                size = Math.max(size, ((Number) id).intValue() + 1);
            }
        }
        if (tokenizer.get("added_tokens") instanceof List<?> tokens) {
            for (Object token : tokens) {
                Map<?, ?> t = (Map<?, ?>) token;
                int id = ((Number) t.get("id")).intValue();
                added.put((String) t.get("content"), id);
                size = Math.max(size, id + 1);
            }
        }
        if (size == 0) {
            throw new IllegalArgumentException(directory.resolve("tokenizer.json") + " has no model.vocab and no added_tokens; give a "
                    + "Hugging Face tokenizer.json");
        }
        int eos = special(tokenizerConfig, "eos_token", added, directory);
        int bos = tokenizerConfig.containsKey("bos_token") && tokenizerConfig.get("bos_token") != null
                ? special(tokenizerConfig, "bos_token", added, directory) : eos;
        return new Vocabulary(Math.max(size, options.vocabSize()), bos, eos);
    }

    /** The id of tokenizer_config.json's {@code key} (a string or an AddedToken object) among the added tokens. */
    private static int special(Map<String, Object> tokenizerConfig, String key, Map<String, Integer> added, Path directory)
    {
        Object value = tokenizerConfig.get(key);
        Object content = value instanceof Map<?, ?> token ? token.get("content") : value;
        Integer id = added.get(content);
        if (id == null) {
            throw new IllegalArgumentException(directory + ": tokenizer_config.json's " + key + " " + content + " is not an added token "
                    + "of tokenizer.json; give a tokenizer whose " + key + " is one");
        }
        return id;
    }

    /**
     * The checkpoint's tensors for {@code config}, by the original checkpoints' names in the order the file stores them; the
     * same values whenever asked for the same seed and config.
     */
    public static SequencedMap<String, Tensor> tensors(DeepseekConfig c, long seed)
    {
        requireNonNull(c, "config is null");
        Draw draw = new Draw(seed);
        int d = c.hiddenSize();
        int heads = c.heads();
        int nope = c.qkNopeHeadDim();
        int rope = c.qkRopeHeadDim();
        int qHead = nope + rope;
        int rank = c.kvLoraRank();
        int v = c.vHeadDim();
        SequencedMap<String, Tensor> t = new LinkedHashMap<>();
        t.put("model.embed_tokens.weight", draw.matrix("model.embed_tokens.weight", c.vocabSize(), d, row -> 1));
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            t.put(p + "input_layernorm.weight", draw.norm(p + "input_layernorm.weight", d));
            String a = p + "self_attn.";
            if (c.qLoraRank() > 0) {
                int q = c.qLoraRank();
                t.put(a + "q_a_proj.weight", draw.matrix(a + "q_a_proj.weight", q, d, row -> 1 / Math.sqrt(d)));
                t.put(a + "q_a_layernorm.weight", draw.norm(a + "q_a_layernorm.weight", q));
                t.put(a + "q_b_proj.weight", draw.matrix(a + "q_b_proj.weight", heads * qHead, q, row -> 3 / Math.sqrt(q)));
            }
            else {
                t.put(a + "q_proj.weight", draw.matrix(a + "q_proj.weight", heads * qHead, d, row -> 3 / Math.sqrt(d)));
            }
            // rows: the latent (kv_lora_rank), then the shared rope key, drawn sharper
            t.put(a + "kv_a_proj_with_mqa.weight", draw.matrix(a + "kv_a_proj_with_mqa.weight", rank + rope, d,
                    row -> (row < rank ? 1 : 3) / Math.sqrt(d)));
            t.put(a + "kv_a_layernorm.weight", draw.norm(a + "kv_a_layernorm.weight", rank));
            // rows per head: the no-rope key's (nope), then the value's (v)
            t.put(a + "kv_b_proj.weight", draw.matrix(a + "kv_b_proj.weight", heads * (nope + v), rank,
                    row -> (row % (nope + v) < nope ? 3 : 1) / Math.sqrt(rank)));
            t.put(a + "o_proj.weight", draw.matrix(a + "o_proj.weight", d, heads * v, row -> 1 / Math.sqrt(heads * v)));
            t.put(p + "post_attention_layernorm.weight", draw.norm(p + "post_attention_layernorm.weight", d));
            String m = p + "mlp.";
            if (!c.isMoeLayer(l)) {
                swiGlu(t, draw, m, c.intermediateSize(), d);
                continue;
            }
            MoeConfig moe = c.moe();
            t.put(m + "gate.weight", draw.matrix(m + "gate.weight", moe.experts(), d, row -> 2 / Math.sqrt(d)));
            if (moe.correctionBias()) {
                // kept >= 0: the reference implementations mask unchosen groups differently (0 or -inf), which agree only then
                t.put(m + "gate.e_score_correction_bias", draw.uniform(m + "gate.e_score_correction_bias", moe.experts(), 0, 0.2));
            }
            for (int e = 0; e < moe.experts(); e++) {
                swiGlu(t, draw, m + "experts." + e + ".", moe.intermediateSize(), d);
            }
            swiGlu(t, draw, m + "shared_experts.", moe.sharedIntermediateSize(), d);
        }
        t.put("model.norm.weight", new Tensor(new int[] {d}, ones(d)));
        if (!c.tieWordEmbeddings()) {
            t.put("lm_head.weight", draw.matrix("lm_head.weight", c.vocabSize(), d, row -> 4 / Math.sqrt(d)));
        }
        return Collections.unmodifiableSequencedMap(t);
    }

    private static void swiGlu(Map<String, Tensor> t, Draw draw, String prefix, int width, int hidden)
    {
        t.put(prefix + "gate_proj.weight", draw.matrix(prefix + "gate_proj.weight", width, hidden, row -> 1 / Math.sqrt(hidden)));
        t.put(prefix + "up_proj.weight", draw.matrix(prefix + "up_proj.weight", width, hidden, row -> 1 / Math.sqrt(hidden)));
        t.put(prefix + "down_proj.weight", draw.matrix(prefix + "down_proj.weight", hidden, width, row -> 1 / Math.sqrt(width)));
    }

    private static float[] ones(int n)
    {
        float[] values = new float[n];
        Arrays.fill(values, 1f);
        return values;
    }

    /**
     * Uniform values with a chosen standard deviation, each tensor from a generator seeded by the seed and its name.
     * Uniform rather than Gaussian so the values need nothing but exact double arithmetic to reproduce.
     */
    private record Draw(long seed)
    {
        private static final double SQRT3 = Math.sqrt(3);

        /** {@code [rows, cols]}, row {@code r}'s values of standard deviation {@code std(r)}. */
        Tensor matrix(String name, int rows, int cols, IntToDoubleFunction std)
        {
            SplittableRandom random = random(name);
            float[] values = new float[Math.multiplyExact(rows, cols)];
            for (int r = 0; r < rows; r++) {
                double bound = SQRT3 * std.applyAsDouble(r);
                for (int i = 0; i < cols; i++) {
                    values[r * cols + i] = (float) ((2 * random.nextDouble() - 1) * bound);
                }
            }
            return new Tensor(new int[] {rows, cols}, values);
        }

        /** An RMSNorm gain near 1: {@code 1 + u}, u of standard deviation 0.1. */
        Tensor norm(String name, int n)
        {
            return uniform(name, n, 1 - 0.1 * SQRT3, 1 + 0.1 * SQRT3);
        }

        Tensor uniform(String name, int n, double from, double to)
        {
            SplittableRandom random = random(name);
            float[] values = new float[n];
            for (int i = 0; i < n; i++) {
                values[i] = (float) (from + (to - from) * random.nextDouble());
            }
            return new Tensor(new int[] {n}, values);
        }

        private SplittableRandom random(String name)
        {
            // String.hashCode is specified, so the stream is the same on every JVM
            return new SplittableRandom(seed * 0x9E3779B97F4A7C15L ^ name.hashCode());
        }
    }

    private static String configJson(DeepseekConfig c, Options o, Vocabulary vocabulary)
    {
        MoeConfig moe = c.moe();
        boolean v3 = o.version() == Version.V3;
        String ropeScaling = c.ropeScaling() instanceof RopeScaling.Yarn y
                ? ("{\"type\": \"yarn\", \"factor\": %s, \"original_max_position_embeddings\": %d, \"beta_fast\": %s, \"beta_slow\": %s, "
                + "\"mscale\": %s, \"mscale_all_dim\": %s}").formatted(y.factor(), y.originalMaxPositions(), y.betaFast(), y.betaSlow(),
                y.mscale(), y.mscaleAllDim())
                : "null";
        String versionKeys = v3 ? "\"rope_interleave\": true, \"num_nextn_predict_layers\": 0, \"ep_size\": 1"
                : "\"aux_loss_alpha\": 0.001, \"seq_aux\": true";
        return """
                {"architectures": ["%s"], "model_type": "%s", "hidden_act": "silu",
                 "vocab_size": %d, "hidden_size": %d, "intermediate_size": %d, "moe_intermediate_size": %d,
                 "num_hidden_layers": %d, "num_attention_heads": %d, "num_key_value_heads": %d,
                 "n_shared_experts": %d, "n_routed_experts": %d, "routed_scaling_factor": %s, "num_experts_per_tok": %d,
                 "topk_method": "%s", "n_group": %d, "topk_group": %d, "scoring_func": "%s", "norm_topk_prob": %s,
                 "moe_layer_freq": 1, "first_k_dense_replace": %d,
                 "q_lora_rank": %s, "kv_lora_rank": %d, "qk_nope_head_dim": %d, "qk_rope_head_dim": %d, "v_head_dim": %d,
                 "max_position_embeddings": %d, "rms_norm_eps": %s, "rope_theta": %s, "rope_scaling": %s,
                 "attention_bias": false, "attention_dropout": 0.0, "initializer_range": 0.02, "pretraining_tp": 1, "use_cache": true,
                 "bos_token_id": %d, "eos_token_id": %d, "tie_word_embeddings": %s, "torch_dtype": "%s", %s}
                """.formatted(o.version().architecture, o.version().modelType, c.vocabSize(), c.hiddenSize(), c.intermediateSize(),
                moe.intermediateSize(), c.layers(), c.heads(), c.heads(), moe.sharedExperts(), moe.experts(), moe.routedScalingFactor(),
                moe.expertsPerToken(), v3 ? "noaux_tc" : "greedy", moe.groups(), moe.groupsPerToken(), v3 ? "sigmoid" : "softmax",
                moe.normalizeWeights(), c.firstDenseLayers(), c.qLoraRank() > 0 ? Integer.toString(c.qLoraRank()) : "null", c.kvLoraRank(),
                c.qkNopeHeadDim(), c.qkRopeHeadDim(), c.vHeadDim(), c.maxPositionEmbeddings(), c.rmsNormEps(), c.ropeTheta(), ropeScaling,
                vocabulary.bos(), vocabulary.eos(), c.tieWordEmbeddings(), torchDtype(o.dtype()), versionKeys);
    }

    private static String torchDtype(TensorDtype dtype)
    {
        return switch (dtype) {
            case F32 -> "float32";
            case F16 -> "float16";
            case BF16, F8_E4M3 -> "bfloat16";
        };
    }
}
