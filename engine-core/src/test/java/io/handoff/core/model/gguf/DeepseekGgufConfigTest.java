package io.handoff.core.model.gguf;

import io.handoff.core.json.Json;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.MoeConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.hf.DeepseekHfConfig;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DeepseekGgufConfigTest
{
    /** A small V3-shaped checkpoint's config.json; {@link #v3Metadata()} is what llama.cpp's converter writes for it. */
    static final String V3_JSON = """
            {"architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 4,
             "num_attention_heads": 4, "q_lora_rank": 96, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
             "v_head_dim": 32, "first_k_dense_replace": 1, "intermediate_size": 512, "moe_intermediate_size": 64,
             "n_routed_experts": 16, "n_shared_experts": 1, "num_experts_per_tok": 4, "n_group": 4, "topk_group": 2,
             "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5,
             "rms_norm_eps": 1e-06, "rope_theta": 10000, "max_position_embeddings": 8192,
             "rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 2048, "beta_fast": 32, "beta_slow": 1,
                              "mscale": 1.0, "mscale_all_dim": 1.0},
             "tie_word_embeddings": false}
            """;

    static Map<String, GgufValue> v3Metadata()
    {
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("general.architecture", new GgufValue(GgufValueType.STRING, "deepseek2"));
        u32(m, "vocab_size", 1000);
        u32(m, "context_length", 8192);
        u32(m, "embedding_length", 256);
        u32(m, "block_count", 4);
        u32(m, "feed_forward_length", 512);
        u32(m, "attention.head_count", 4);
        u32(m, "attention.head_count_kv", 1);
        u32(m, "attention.q_lora_rank", 96);
        u32(m, "attention.kv_lora_rank", 64);
        u32(m, "attention.key_length", 64 + 16);
        u32(m, "attention.value_length", 64);
        u32(m, "attention.key_length_mla", 32 + 16);
        u32(m, "attention.value_length_mla", 32);
        u32(m, "rope.dimension_count", 16);
        u32(m, "leading_dense_block_count", 1);
        u32(m, "expert_count", 16);
        u32(m, "expert_used_count", 4);
        u32(m, "expert_shared_count", 1);
        u32(m, "expert_feed_forward_length", 64);
        u32(m, "expert_gating_func", 2);
        u32(m, "expert_group_count", 4);
        u32(m, "expert_group_used_count", 2);
        f32(m, "expert_weights_scale", 2.5f);
        m.put("deepseek2.expert_weights_norm", new GgufValue(GgufValueType.BOOL, true));
        f32(m, "attention.layer_norm_rms_epsilon", 1e-6f);
        f32(m, "rope.freq_base", 10000f);
        m.put("deepseek2.rope.scaling.type", new GgufValue(GgufValueType.STRING, "yarn"));
        f32(m, "rope.scaling.factor", 4f);
        u32(m, "rope.scaling.original_context_length", 2048);
        f32(m, "rope.scaling.yarn_log_multiplier", 0.1f);
        return m;
    }

    @SuppressWarnings("unchecked")
    @Test
    void llamaCppsMetadataReadsAsTheSameConfigAsItsHuggingFaceTwin()
    {
        DeepseekConfig hf = DeepseekHfConfig.parse((Map<String, Object>) Json.parse(V3_JSON, "config.json"), "config.json");
        DeepseekConfig gguf = DeepseekGgufConfig.read(metadata(v3Metadata()), false);

        assertThat(gguf).isEqualTo(hf);
        assertThat(gguf.moe()).isEqualTo(new MoeConfig(16, 4, 1, 64, MoeConfig.Scoring.SIGMOID, true, 4, 2,
                MoeConfig.GroupScoring.TOP_TWO_SUM, true, 2.5f));
        assertThat(gguf.ropeScaling()).isEqualTo(new RopeScaling.Yarn(4f, 2048, 32f, 1f, 1f, 1f));
    }

    @Test
    void olderFilesWithoutTheMlaKeysHoldThePerHeadWidthsInThePlainOnes()
    {
        Map<String, GgufValue> m = v3Metadata();
        m.remove("deepseek2.attention.key_length_mla");
        m.remove("deepseek2.attention.value_length_mla");
        u32(m, "attention.key_length", 48);
        u32(m, "attention.value_length", 32);
        m.remove("deepseek2.vocab_size");
        m.put(GgufModel.TOKENS_KEY, new GgufValue(GgufValueType.ARRAY, new GgufValue.GgufArray(GgufValueType.STRING,
                List.of(new GgufValue(GgufValueType.STRING, "a"), new GgufValue(GgufValueType.STRING, "b")))));
        m.remove("deepseek2.expert_gating_func");
        m.remove("deepseek2.rope.scaling.type");

        DeepseekConfig config = DeepseekGgufConfig.read(metadata(m), true);
        assertThat(config.qkNopeHeadDim()).isEqualTo(32);
        assertThat(config.qkRopeHeadDim()).isEqualTo(16);
        assertThat(config.vHeadDim()).isEqualTo(32);
        assertThat(config.vocabSize()).isEqualTo(2);
        assertThat(config.moe().scoring()).as("no gating func: llama.cpp's softmax default").isEqualTo(MoeConfig.Scoring.SOFTMAX);
        assertThat(config.ropeScaling()).isEqualTo(RopeScaling.NONE);
        assertThat(config.tieWordEmbeddings()).isTrue();
    }

    @Test
    void inconsistentMetadataIsRefusedNamingTheKey()
    {
        assertRefused("attention.key_length", 70, "deepseek2.attention.key_length");
        assertRefused("attention.key_length_mla", 16, "deepseek2.attention.key_length_mla");
        assertRefused("expert_used_count", 20, "num_experts_per_tok");
        assertRefused("expert_gating_func", 3, "deepseek2.expert_gating_func");
        assertRefused("leading_dense_block_count", 5, "first_k_dense_replace");
        Map<String, GgufValue> m = v3Metadata();
        m.put("deepseek2.rope.scaling.type", new GgufValue(GgufValueType.STRING, "linear"));
        assertThatThrownBy(() -> DeepseekGgufConfig.read(metadata(m), false)).hasMessageContaining("deepseek2.rope.scaling.type");
        Map<String, GgufValue> llama = v3Metadata();
        llama.put("general.architecture", new GgufValue(GgufValueType.STRING, "llama"));
        assertThatThrownBy(() -> DeepseekGgufConfig.read(metadata(llama), false)).hasMessageContaining("general.architecture");
    }

    private static void assertRefused(String key, int value, String named)
    {
        Map<String, GgufValue> m = v3Metadata();
        u32(m, key, value);
        assertThatThrownBy(() -> DeepseekGgufConfig.read(metadata(m), false))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(named);
    }

    private static GgufMetadata metadata(Map<String, GgufValue> values)
    {
        return new GgufMetadata(Path.of("model.gguf"), values);
    }

    private static void u32(Map<String, GgufValue> m, String key, int value)
    {
        m.put("deepseek2." + key, new GgufValue(GgufValueType.UINT32, value));
    }

    private static void f32(Map<String, GgufValue> m, String key, float value)
    {
        m.put("deepseek2." + key, new GgufValue(GgufValueType.FLOAT32, value));
    }
}
