package io.handoff.core.model.hf;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.Architecture;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import static java.util.Objects.requireNonNull;

/**
 * What a Hugging Face {@code config.json} says about a Llama-style (GQA) decoder: the fields
 * {@link ModelConfig} needs, among them q/k/v projection biases (Qwen2), per-head q/k RMS norms
 * (Qwen3), and {@code rope_scaling} as written; of the scalings only Llama 3.1's {@code llama3} is run,
 * the others are listed by {@link #unsupportedFeatures()}. Defaults are Transformers'
 * for the fields that commonly go unwritten; the shape fields must be present.
 *
 * @param architecture the supported {@code architectures[0]}
 * @param attentionBias q, k and v projections carry biases ({@code q_proj.bias}, …)
 * @param qkNorm queries and keys are RMS-normalised per head ({@code self_attn.q_norm.weight}, {@code k_norm})
 * @param ropeScaling the {@code rope_scaling} object as written (or, from Transformers 5, {@code rope_parameters} when its
 *         {@code rope_type} is not {@code default}), empty when there is no scaling
 */
public record HfModelConfig(
        HfArchitecture architecture,
        int vocabSize,
        int hiddenSize,
        int layers,
        int heads,
        int kvHeads,
        int headDim,
        int intermediateSize,
        double ropeTheta,
        double rmsNormEps,
        int maxPositionEmbeddings,
        boolean tieWordEmbeddings,
        boolean attentionBias,
        boolean qkNorm,
        Map<String, Object> ropeScaling)
{
    public static final String FILE = "config.json";
    public static final int MAX_CONFIG_BYTES = 4 * 1024 * 1024;

    /** The {@code architectures[0]} values read, and what each implies beyond the common fields. */
    public enum HfArchitecture
    {
        LLAMA("LlamaForCausalLM"),
        MISTRAL("MistralForCausalLM"),
        QWEN2("Qwen2ForCausalLM"),
        QWEN3("Qwen3ForCausalLM");

        private final String hfName;

        HfArchitecture(String hfName)
        {
            this.hfName = hfName;
        }

        public String hfName()
        {
            return hfName;
        }

        /** Every architecture a checkpoint directory may name, DeepSeek's ({@link DeepseekHfConfig}) included. */
        static String supported()
        {
            return Arrays.stream(values()).map(HfArchitecture::hfName).collect(Collectors.joining(", ")) + ", "
                    + String.join(", ", DeepseekHfConfig.ARCHITECTURES);
        }
    }

    public HfModelConfig
    {
        requireNonNull(architecture, "architecture is null");
        // a copy that keeps document order and JSON nulls, which Map.copyOf refuses
        ropeScaling = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(ropeScaling, "ropeScaling is null")));
    }

    /** Reads {@code config.json} from a model directory. */
    public static HfModelConfig read(Path directory)
    {
        Path file = requireNonNull(directory, "directory is null").resolve(FILE);
        return parse(JsonFile.readObject(file, MAX_CONFIG_BYTES), file.toString());
    }

    /** @param source the file the object came from, for errors */
    public static HfModelConfig parse(Map<String, Object> config, String source)
    {
        ConfigFields fields = new ConfigFields(config, source);
        HfArchitecture architecture = architecture(config, source);
        String activation = fields.string("hidden_act", "silu");
        if (!activation.equals("silu")) {
            throw new IllegalArgumentException(source + ": hidden_act is \"" + activation + "\"; the engine's MLP is SwiGLU, which needs silu");
        }
        int hidden = fields.positiveInt("hidden_size");
        int heads = fields.positiveInt("num_attention_heads");
        if (hidden % heads != 0 && !fields.has("head_dim")) {
            throw new IllegalArgumentException(source + ": hidden_size " + hidden + " is not a multiple of num_attention_heads " + heads
                    + " and there is no head_dim");
        }
        ConfigFields ropeParameters = new ConfigFields(fields.objectOrEmpty("rope_parameters"), source + " rope_parameters");
        boolean attentionBias = switch (architecture) {
            case QWEN2 -> true;
            case MISTRAL -> false;
            case LLAMA, QWEN3 -> fields.bool("attention_bias", false);
        };
        return new HfModelConfig(
                architecture,
                fields.positiveInt("vocab_size"),
                hidden,
                fields.positiveInt("num_hidden_layers"),
                heads,
                fields.has("num_key_value_heads") ? fields.positiveInt("num_key_value_heads") : heads,
                fields.has("head_dim") ? fields.positiveInt("head_dim") : hidden / heads,
                fields.positiveInt("intermediate_size"),
                ropeTheta(fields, ropeParameters),
                fields.has("rms_norm_eps") ? fields.positiveDouble("rms_norm_eps") : 1e-6,
                fields.positiveInt("max_position_embeddings"),
                fields.bool("tie_word_embeddings", false),
                attentionBias,
                architecture == HfArchitecture.QWEN3,
                ropeScaling(fields, ropeParameters));
    }

    /** Transformers 5 writes {@code rope_theta} and the scaling inside {@code rope_parameters}; older versions at the top level. */
    static double ropeTheta(ConfigFields fields, ConfigFields ropeParameters)
    {
        if (fields.has("rope_theta")) {
            return fields.positiveDouble("rope_theta");
        }
        return ropeParameters.has("rope_theta") ? ropeParameters.positiveDouble("rope_theta") : 10000.0;
    }

    static Map<String, Object> ropeScaling(ConfigFields fields, ConfigFields ropeParameters)
    {
        Map<String, Object> scaling = fields.objectOrEmpty("rope_scaling");
        if (!scaling.isEmpty()) {
            return scaling;
        }
        String type = ropeParameters.string("rope_type", "default");
        return type.equals("default") ? Map.of() : ropeParameters.config();
    }

    private static HfArchitecture architecture(Map<String, Object> config, String source)
    {
        if (!(config.get("architectures") instanceof List<?> list) || list.isEmpty() || !(list.getFirst() instanceof String name)) {
            throw new IllegalArgumentException(source + ": \"architectures\" must be a non-empty array of strings, was "
                    + config.get("architectures") + "; supported: " + HfArchitecture.supported());
        }
        return Arrays.stream(HfArchitecture.values())
                .filter(a -> a.hfName().equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException(source + ": architecture " + name
                        + " is not supported; supported: " + HfArchitecture.supported()));
    }

    /**
     * The engine's shape for this checkpoint, named {@code name} (the model directory's name).
     * {@code weightsSeed} is 0: the weights are the checkpoint's, not seeded. A {@code rope_scaling} the engine
     * does not model is not checked here but listed by {@link #unsupportedFeatures()}, which the caller that loads a
     * checkpoint must refuse; it maps to {@link RopeScaling#NONE}.
     */
    public ModelConfig toModelConfig(String name)
    {
        return toModelConfig(name, maxPositionEmbeddings, "");
    }

    /**
     * @param maxContext the context the engine serves, at most {@code max_position_embeddings}: RoPE tables and
     *         the per-request token table are sized by it
     * @param weightsIdentity what identifies the checkpoint's weights, see {@link ModelConfig#weightsIdentity()}
     */
    public ModelConfig toModelConfig(String name, int maxContext, String weightsIdentity)
    {
        return new ModelConfig(name, Architecture.GQA, vocabSize, hiddenSize, layers, heads, kvHeads, headDim,
                0, 0, 0, 0, 0, intermediateSize, (float) ropeTheta, (float) rmsNormEps, Math.min(maxContext, maxPositionEmbeddings), 0L,
                tieWordEmbeddings, weightsIdentity, attentionBias, qkNorm, modelRopeScaling().orElse(RopeScaling.NONE));
    }

    /** {@code rope_scaling}'s {@code rope_type} (or the older {@code type}), {@code default} when there is none. */
    public String ropeScalingType()
    {
        Object type = ropeScaling.getOrDefault("rope_type", ropeScaling.get("type"));
        return ropeScaling.isEmpty() ? "default" : String.valueOf(type);
    }

    /**
     * The scaling the transformer runs: none, or Llama 3.1's {@code llama3} with all four of its fields; empty for any
     * other {@code rope_scaling} (another type, or llama3 missing a field), which {@link #unsupportedFeatures()} names.
     */
    public Optional<RopeScaling> modelRopeScaling()
    {
        String type = ropeScalingType();
        if (type.equals("default")) {
            return Optional.of(RopeScaling.NONE);
        }
        if (!type.equals("llama3")) {
            return Optional.empty();
        }
        ConfigFields fields = new ConfigFields(ropeScaling, "rope_scaling");
        List<String> keys = List.of("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings");
        if (!keys.stream().allMatch(fields::has)) {
            return Optional.empty();
        }
        return Optional.of(new RopeScaling.Llama3((float) fields.positiveDouble("factor"), (float) fields.positiveDouble("low_freq_factor"),
                (float) fields.positiveDouble("high_freq_factor"), fields.positiveInt("original_max_position_embeddings")));
    }

    /**
     * What this checkpoint needs that {@code Transformer} does not do yet, one phrase each; empty when it
     * runs as is. A loader must refuse a non-empty list rather than produce wrong logits.
     */
    public List<String> unsupportedFeatures()
    {
        List<String> missing = new ArrayList<>();
        if (attentionBias && architecture != HfArchitecture.QWEN2) {
            // Transformers' Llama and Qwen3 give o_proj a bias too when attention_bias is set; Qwen2 biases only q, k and v
            missing.add("an o_proj bias (attention_bias on " + architecture.hfName() + " biases o_proj as well as q/k/v)");
        }
        if (modelRopeScaling().isEmpty()) {
            missing.add(ropeScalingType().equals("llama3")
                    ? "rope scaling llama3 without all of factor, low_freq_factor, high_freq_factor, original_max_position_embeddings"
                    : "rope scaling " + ropeScalingType() + " (supported: llama3)");
        }
        return List.copyOf(missing);
    }
}
