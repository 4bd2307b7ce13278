package io.handoff.core.model.hf;

import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;

import java.util.List;
import java.util.Map;

/** Reads a {@code DeepseekV2ForCausalLM} or {@code DeepseekV3ForCausalLM} config.json into a {@link DeepseekConfig}. */
public final class DeepseekHfConfig
{
    static final List<String> ARCHITECTURES = List.of("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM");

    private DeepseekHfConfig() {}

    /** Whether config.json's {@code architectures[0]} is a DeepSeek one, which {@link #parse} reads. */
    public static boolean isDeepseek(Map<String, Object> config)
    {
        return config.get("architectures") instanceof List<?> list && !list.isEmpty() && ARCHITECTURES.contains(list.getFirst());
    }

    /** @param source the file the object came from, for errors */
    public static DeepseekConfig parse(Map<String, Object> config, String source)
    {
        ConfigFields fields = new ConfigFields(config, source);
        if (!isDeepseek(config)) {
            throw new IllegalArgumentException(source + ": \"architectures\" must name one of " + ARCHITECTURES + ", was "
                    + config.get("architectures"));
        }
        String activation = fields.string("hidden_act", "silu");
        if (!activation.equals("silu")) {
            throw new IllegalArgumentException(source + ": hidden_act is \"" + activation + "\"; DeepSeek's feed-forward layers are SwiGLU, "
                    + "which needs silu");
        }
        if (fields.bool("attention_bias", false)) {
            throw new IllegalArgumentException(source + ": attention_bias is true, but DeepSeek's MLA projections have no biases and the "
                    + "engine adds none: set it false (or remove it) if the checkpoint has no *_proj.bias tensors");
        }
        int heads = fields.positiveInt("num_attention_heads");
        if (fields.has("num_key_value_heads") && fields.positiveInt("num_key_value_heads") != heads) {
            throw new IllegalArgumentException(source + ": \"num_key_value_heads\" is " + config.get("num_key_value_heads")
                    + " but MLA gives every one of the " + heads + " num_attention_heads its own key and value: make them equal");
        }
        if (fields.intOr("moe_layer_freq", 1) != 1) {
            throw new IllegalArgumentException(source + ": \"moe_layer_freq\" is " + config.get("moe_layer_freq")
                    + "; only 1 (every layer after first_k_dense_replace is MoE) is supported");
        }
        ConfigFields ropeParameters = new ConfigFields(fields.objectOrEmpty("rope_parameters"), source + " rope_parameters");
        try {
            return new DeepseekConfig(
                    fields.positiveInt("vocab_size"),
                    fields.positiveInt("hidden_size"),
                    fields.positiveInt("num_hidden_layers"),
                    heads,
                    fields.intOr("q_lora_rank", 0),
                    fields.positiveInt("kv_lora_rank"),
                    fields.positiveInt("qk_nope_head_dim"),
                    fields.positiveInt("qk_rope_head_dim"),
                    fields.positiveInt("v_head_dim"),
                    fields.intOr("first_k_dense_replace", 0),
                    fields.positiveInt("intermediate_size"),
                    moe(fields, ARCHITECTURES.getFirst().equals(((List<?>) config.get("architectures")).getFirst())),
                    (float) (fields.has("rms_norm_eps") ? fields.positiveDouble("rms_norm_eps") : 1e-6),
                    (float) HfModelConfig.ropeTheta(fields, ropeParameters),
                    ropeScaling(new ConfigFields(HfModelConfig.ropeScaling(fields, ropeParameters), source + " rope_scaling")),
                    fields.positiveInt("max_position_embeddings"),
                    fields.bool("tie_word_embeddings", false));
        }
        catch (IllegalArgumentException e) {
            if (e.getMessage().startsWith(source)) {
                throw e;
            }
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /**
     * As DeepSeek's modeling code routes: the chosen weights are normalized only when more than one expert is chosen; V3
     * then always scales by {@code routed_scaling_factor}, V2 only when it did not normalize.
     */
    private static MoeConfig moe(ConfigFields fields, boolean v2)
    {
        String scoringFunc = fields.string("scoring_func", "softmax");
        MoeConfig.Scoring scoring = switch (scoringFunc) {
            case "softmax" -> MoeConfig.Scoring.SOFTMAX;
            case "sigmoid" -> MoeConfig.Scoring.SIGMOID;
            default -> throw new IllegalArgumentException(fields.source() + ": \"scoring_func\" is \"" + scoringFunc
                    + "\"; supported: softmax, sigmoid");
        };
        String topkMethod = fields.string("topk_method", "greedy");
        boolean grouped = switch (topkMethod) {
            case "greedy" -> false;
            case "group_limited_greedy", "noaux_tc" -> true;
            default -> throw new IllegalArgumentException(fields.source() + ": \"topk_method\" is \"" + topkMethod
                    + "\"; supported: greedy, group_limited_greedy, noaux_tc");
        };
        boolean noaux = topkMethod.equals("noaux_tc");
        boolean normalize = fields.bool("norm_topk_prob", false) && fields.positiveInt("num_experts_per_tok") > 1;
        try {
            return new MoeConfig(
                    fields.positiveInt("n_routed_experts"),
                    fields.positiveInt("num_experts_per_tok"),
                    fields.intOr("n_shared_experts", 0),
                    fields.positiveInt("moe_intermediate_size"),
                    scoring,
                    noaux,
                    grouped ? fields.intOr("n_group", 1) : 1,
                    grouped ? fields.intOr("topk_group", 1) : 1,
                    noaux ? MoeConfig.GroupScoring.TOP_TWO_SUM : MoeConfig.GroupScoring.MAX,
                    normalize,
                    v2 && normalize ? 1f : (float) fields.numberOr("routed_scaling_factor", 1.0));
        }
        catch (IllegalArgumentException e) {
            if (e.getMessage().startsWith(fields.source())) {
                throw e;
            }
            throw new IllegalArgumentException(fields.source() + ": " + e.getMessage(), e);
        }
    }

    private static RopeScaling ropeScaling(ConfigFields scaling)
    {
        if (scaling.config().isEmpty()) {
            return RopeScaling.NONE;
        }
        String type = scaling.string("rope_type", scaling.string("type", "default"));
        return switch (type) {
            case "default" -> RopeScaling.NONE;
            case "yarn" -> new RopeScaling.Yarn(
                    (float) scaling.positiveDouble("factor"),
                    scaling.positiveInt("original_max_position_embeddings"),
                    (float) scaling.numberOr("beta_fast", RopeScaling.Yarn.DEFAULT_BETA_FAST),
                    (float) scaling.numberOr("beta_slow", RopeScaling.Yarn.DEFAULT_BETA_SLOW),
                    (float) scaling.numberOr("mscale", 1),
                    (float) scaling.numberOr("mscale_all_dim", 0));
            default -> throw new IllegalArgumentException(scaling.source() + ": type \"" + type + "\" is not supported for DeepSeek; "
                    + "supported: yarn");
        };
    }
}
