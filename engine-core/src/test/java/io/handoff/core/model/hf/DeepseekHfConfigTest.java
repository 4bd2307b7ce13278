package io.handoff.core.model.hf;

import io.handoff.core.json.Json;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class DeepseekHfConfigTest
{
    static final String V2_LITE = """
            {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "vocab_size": 102400, "hidden_size": 2048,
             "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "q_lora_rank": null, "kv_lora_rank": 512,
             "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "first_k_dense_replace": 1, "intermediate_size": 10944,
             "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "n_group": 1,
             "topk_group": 1, "topk_method": "greedy", "scoring_func": "softmax", "norm_topk_prob": false, "routed_scaling_factor": 1.0,
             "moe_layer_freq": 1, "rms_norm_eps": 1e-06, "rope_theta": 10000, "max_position_embeddings": 163840,
             "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
                              "mscale": 0.707, "mscale_all_dim": 0.707},
             "tie_word_embeddings": false, "hidden_act": "silu"}
            """;

    static final String V3 = """
            {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
             "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
             "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "first_k_dense_replace": 3, "intermediate_size": 18432,
             "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "n_group": 8,
             "topk_group": 4, "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5,
             "moe_layer_freq": 1, "rms_norm_eps": 1e-06, "rope_theta": 10000, "max_position_embeddings": 163840,
             "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
                              "mscale": 1.0, "mscale_all_dim": 1.0},
             "tie_word_embeddings": false}
            """;

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(String json)
    {
        return new LinkedHashMap<>((Map<String, Object>) Json.parse(json, "config.json"));
    }

    @Test
    void deepseekV2LiteBecomesPlainQueryGreedySoftmaxRoutingWithYarn()
    {
        DeepseekConfig config = DeepseekHfConfig.parse(map(V2_LITE), "config.json");

        assertThat(config).isEqualTo(new DeepseekConfig(102400, 2048, 27, 16, 0, 512, 128, 64, 128, 1, 10944,
                new MoeConfig(64, 6, 2, 1408, MoeConfig.Scoring.SOFTMAX, false, 1, 1, MoeConfig.GroupScoring.MAX, false, 1f),
                1e-6f, 10000f, new RopeScaling.Yarn(40f, 4096, 32f, 1f, 0.707f, 0.707f), 163840, false));
        double mscale = 0.1 * 0.707f * Math.log(40) + 1;
        assertThat(config.softmaxScale()).isCloseTo(mscale * mscale / Math.sqrt(192), within(1e-12));
        assertThat(config.isMoeLayer(0)).isFalse();
        assertThat(config.isMoeLayer(1)).isTrue();
    }

    @Test
    void deepseekV3BecomesLowRankQueryAndSigmoidGroupRoutingWithCorrectionBias()
    {
        DeepseekConfig config = DeepseekHfConfig.parse(map(V3), "config.json");

        assertThat(config).isEqualTo(new DeepseekConfig(129280, 7168, 61, 128, 1536, 512, 128, 64, 128, 3, 18432,
                new MoeConfig(256, 8, 1, 2048, MoeConfig.Scoring.SIGMOID, true, 8, 4, MoeConfig.GroupScoring.TOP_TWO_SUM, true, 2.5f),
                1e-6f, 10000f, new RopeScaling.Yarn(40f, 4096, 32f, 1f, 1f, 1f), 163840, false));
        assertThat(config.qkHeadDim()).isEqualTo(192);
        double mscale = 0.1 * Math.log(40) + 1;
        assertThat(config.softmaxScale()).isCloseTo(mscale * mscale / Math.sqrt(192), within(1e-12));
    }

    @Test
    void withoutRopeScalingTheSoftmaxScaleIsTheInverseRootOfTheKeyWidth()
    {
        Map<String, Object> config = map(V3);
        config.put("rope_scaling", null);
        config.put("topk_method", "group_limited_greedy");
        config.put("scoring_func", "softmax");
        DeepseekConfig parsed = DeepseekHfConfig.parse(config, "config.json");
        assertThat(parsed.ropeScaling()).isEqualTo(RopeScaling.NONE);
        assertThat(parsed.softmaxScale()).isEqualTo(1 / Math.sqrt(192));
        assertThat(parsed.moe().groupScoring()).isEqualTo(MoeConfig.GroupScoring.MAX);
        assertThat(parsed.moe().correctionBias()).isFalse();
        assertThat(parsed.moe().groups()).isEqualTo(8);
    }

    @Test
    void inconsistenciesAreRefusedNamingTheKeyAndTheFile()
    {
        assertRefused("num_key_value_heads", 8L, "num_key_value_heads");
        assertRefused("num_experts_per_tok", 300L, "num_experts_per_tok");
        assertRefused("scoring_func", "relu", "scoring_func");
        assertRefused("topk_method", "random", "topk_method");
        assertRefused("q_lora_rank", -1L, "q_lora_rank");
        assertRefused("first_k_dense_replace", 62L, "first_k_dense_replace");
        assertRefused("qk_rope_head_dim", 63L, "qk_rope_head_dim");
        assertRefused("architectures", java.util.List.of("LlamaForCausalLM"), "architectures");
        assertRefused("rope_scaling", Map.of("type", "linear", "factor", 2L), "linear");
        assertRefused("rope_scaling", Map.of("type", "yarn", "factor", 40L, "original_max_position_embeddings", 4096L, "beta_fast", 1L,
                "beta_slow", 1L), "beta_fast");
        assertRefused("moe_layer_freq", 2L, "moe_layer_freq");
        assertRefused("hidden_act", "gelu", "hidden_act is \"gelu\"");
        assertRefused("attention_bias", true, "attention_bias is true");
    }

    @Test
    void routingWeightsAreNormalizedAndScaledAsDeepseeksModelingCodeDoes()
    {
        Map<String, Object> v2 = map(V2_LITE);
        v2.put("norm_topk_prob", true);
        v2.put("routed_scaling_factor", 16L);
        // V2 scales only the weights it did not normalize
        assertThat(DeepseekHfConfig.parse(v2, "config.json").moe().normalizeWeights()).isTrue();
        assertThat(DeepseekHfConfig.parse(v2, "config.json").moe().routedScalingFactor()).isEqualTo(1f);
        v2.put("num_experts_per_tok", 1L);
        assertThat(DeepseekHfConfig.parse(v2, "config.json").moe().normalizeWeights()).isFalse();
        assertThat(DeepseekHfConfig.parse(v2, "config.json").moe().routedScalingFactor()).isEqualTo(16f);
        // V3 normalizes (more than one expert) and then always scales
        Map<String, Object> v3 = map(V3);
        assertThat(DeepseekHfConfig.parse(v3, "config.json").moe().normalizeWeights()).isTrue();
        assertThat(DeepseekHfConfig.parse(v3, "config.json").moe().routedScalingFactor()).isEqualTo(2.5f);
        v3.put("num_experts_per_tok", 1L);
        assertThat(DeepseekHfConfig.parse(v3, "config.json").moe().normalizeWeights()).isFalse();
        assertThat(DeepseekHfConfig.parse(v3, "config.json").moe().routedScalingFactor()).isEqualTo(2.5f);
    }

    @Test
    void theEngineShapeIsMlaWithTheMixtureOfExpertsAfterTheDenseLayersAndYarnInTheSoftmaxScale()
    {
        DeepseekConfig v3 = DeepseekHfConfig.parse(map(V3), "config.json");
        io.handoff.core.model.ModelConfig c = v3.toModelConfig("v3", 4096, "weights-1");
        assertThat(DeepseekHfConfig.isDeepseek(map(V3))).isTrue();
        assertThat(DeepseekHfConfig.isDeepseek(Map.of("architectures", java.util.List.of("LlamaForCausalLM")))).isFalse();
        assertThat(c.architecture()).isEqualTo(io.handoff.core.model.Architecture.MLA);
        assertThat(c.maxContext()).isEqualTo(4096);
        assertThat(c.moe()).isEqualTo(v3.moe());
        assertThat(java.util.stream.IntStream.range(0, 5).mapToObj(c::isMoeLayer)).containsExactly(false, false, false, true, true);
        // one latent "head" per token: kv_lora_rank + the rope key, V its latent prefix
        assertThat(c.attentionGeometry().keyRowElements()).isEqualTo(512 + 64);
        assertThat(c.attentionGeometry().valueRowElements()).isEqualTo(512);
        assertThat((double) c.attentionGeometry().scale()).isCloseTo(v3.softmaxScale(), within(1e-7));
        assertThat(c.compatibilityHash()).isNotEqualTo(DeepseekHfConfig.parse(map(V2_LITE), "config.json")
                .toModelConfig("v3", 4096, "weights-1").compatibilityHash());
    }

    private static void assertRefused(String key, Object value, String named)
    {
        Map<String, Object> config = map(V3);
        config.put(key, value);
        assertThatThrownBy(() -> DeepseekHfConfig.parse(config, "model/config.json"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("model/config.json")
                .hasMessageContaining(named);
    }
}
