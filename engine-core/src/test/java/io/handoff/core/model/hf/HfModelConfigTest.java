package io.handoff.core.model.hf;

import io.handoff.core.model.Architecture;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HfModelConfigTest
{
    @TempDir
    Path dir;

    private HfModelConfig read(String json)
    {
        SafetensorsWriter.writeText(dir.resolve("config.json"), json);
        return HfModelConfig.read(dir);
    }

    @Test
    void aLlamaConfigBecomesAGqaModelConfigNamedAfterItsDirectory()
    {
        HfModelConfig config = read("""
                {
                  "architectures": ["LlamaForCausalLM"],
                  "model_type": "llama",
                  "vocab_size": 128256,
                  "hidden_size": 2048,
                  "num_hidden_layers": 16,
                  "num_attention_heads": 32,
                  "num_key_value_heads": 8,
                  "intermediate_size": 8192,
                  "hidden_act": "silu",
                  "rope_theta": 500000.0,
                  "rms_norm_eps": 1e-05,
                  "max_position_embeddings": 131072,
                  "tie_word_embeddings": true,
                  "rope_scaling": {"factor": 32.0, "rope_type": "llama3", "original_max_position_embeddings": 8192},
                  "torch_dtype": "bfloat16"
                }
                """);

        assertThat(config).isEqualTo(new HfModelConfig(HfModelConfig.HfArchitecture.LLAMA, 128256, 2048, 16, 32, 8, 64, 8192,
                500000.0, 1e-5, 131072, true, false, false,
                Map.of("factor", new BigDecimal("32.0"), "rope_type", "llama3", "original_max_position_embeddings", 8192L)));
        ModelConfig model = config.toModelConfig(dir.getFileName().toString());
        assertThat(model).isEqualTo(new ModelConfig(dir.getFileName().toString(), Architecture.GQA, 128256, 2048, 16, 32, 8, 64,
                0, 0, 0, 0, 0, 8192, 500000f, 1e-5f, 131072, 0L, true, ""));
        assertThat(config.unsupportedFeatures()).as("tied embeddings are implemented; llama3 scaling needs all four fields")
                .containsExactly("rope scaling llama3 without all of factor, low_freq_factor, high_freq_factor, original_max_position_embeddings");
    }

    @Test
    void llama31sRopeScalingBecomesLlama3FrequencyRemapping()
    {
        HfModelConfig config = read("""
                {"architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "hidden_size": 2048, "num_hidden_layers": 16,
                 "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192, "rope_theta": 500000.0,
                 "rms_norm_eps": 1e-05, "max_position_embeddings": 131072, "tie_word_embeddings": true,
                 "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
                """);

        assertThat(config.unsupportedFeatures()).isEmpty();
        ModelConfig model = config.toModelConfig("llama-3.2-1b");
        assertThat(model.ropeScaling()).isEqualTo(new RopeScaling.Llama3(32f, 1f, 4f, 8192));
        assertThat(model.attentionBias()).isFalse();
        assertThat(model.qkNorm()).isFalse();
        assertThat(model.compatibilityHash()).as("the scaling is part of the hash")
                .isNotEqualTo(new ModelConfig(model.name(), Architecture.GQA, 128256, 2048, 16, 32, 8, 64, 0, 0, 0, 0, 0, 8192, 500000f, 1e-5f,
                        131072, 0L, true, "").compatibilityHash());
    }

    @Test
    void attentionBiasOnLlamaOrQwen3IsRefusedBecauseItAlsoBiasesOProj()
    {
        HfModelConfig config = read("""
                {"architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "hidden_size": 64, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 4096, "attention_bias": true}
                """);

        assertThat(config.attentionBias()).isTrue();
        assertThat(config.unsupportedFeatures())
                .containsExactly("an o_proj bias (attention_bias on LlamaForCausalLM biases o_proj as well as q/k/v)");
    }

    @Test
    void otherRopeScalingTypesStayRefusedByName()
    {
        HfModelConfig config = read("""
                {"architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "hidden_size": 64, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 4096,
                 "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}}
                """);

        assertThat(config.unsupportedFeatures()).containsExactly("rope scaling yarn (supported: llama3)");
        assertThat(config.toModelConfig("m").ropeScaling()).isEqualTo(RopeScaling.NONE);
    }

    @Test
    void aQwen2ConfigHasQkvBiasesWhateverItWrites()
    {
        HfModelConfig config = read("""
                {"architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936, "hidden_size": 896, "num_hidden_layers": 24,
                 "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864, "rope_theta": 1000000.0,
                 "rms_norm_eps": 1e-06, "max_position_embeddings": 32768, "tie_word_embeddings": true, "rope_scaling": null,
                 "sliding_window": 32768, "use_sliding_window": false}
                """);

        assertThat(config.architecture()).isEqualTo(HfModelConfig.HfArchitecture.QWEN2);
        assertThat(config.attentionBias()).isTrue();
        assertThat(config.qkNorm()).isFalse();
        assertThat(config.tieWordEmbeddings()).isTrue();
        assertThat(config.headDim()).isEqualTo(64);
        assertThat(config.ropeTheta()).isEqualTo(1_000_000.0);
        assertThat(config.ropeScaling()).isEmpty();
        assertThat(config.unsupportedFeatures()).as("biases are implemented").isEmpty();
        ModelConfig model = config.toModelConfig("qwen2");
        assertThat(model.attentionBias()).isTrue();
        assertThat(model.qkNorm()).isFalse();
        assertThat(model.ropeScaling()).isEqualTo(RopeScaling.NONE);
    }

    @Test
    void aQwen3ConfigHasQkNormAndAnExplicitHeadDim()
    {
        HfModelConfig config = read("""
                {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936, "hidden_size": 1024, "num_hidden_layers": 28,
                 "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
                 "rope_theta": 1000000, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960, "tie_word_embeddings": true,
                 "attention_bias": false}
                """);

        assertThat(config.architecture()).isEqualTo(HfModelConfig.HfArchitecture.QWEN3);
        assertThat(config.qkNorm()).isTrue();
        assertThat(config.attentionBias()).isFalse();
        assertThat(config.headDim()).isEqualTo(128);
        assertThat(config.toModelConfig("qwen3").headDim()).isEqualTo(128);
        assertThat(config.unsupportedFeatures()).as("q/k norms are implemented").isEmpty();
        assertThat(config.toModelConfig("qwen3").qkNorm()).isTrue();
        assertThat(config.toModelConfig("qwen3").attentionBias()).isFalse();
    }

    @Test
    void unwrittenOptionalFieldsTakeTransformersDefaults()
    {
        HfModelConfig config = read("""
                {"architectures": ["MistralForCausalLM"], "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "head_dim": null, "intermediate_size": 14336, "max_position_embeddings": 32768}
                """);

        assertThat(config.kvHeads()).isEqualTo(32);
        assertThat(config.headDim()).isEqualTo(128);
        assertThat(config.ropeTheta()).isEqualTo(10000.0);
        assertThat(config.rmsNormEps()).isEqualTo(1e-6);
        assertThat(config.tieWordEmbeddings()).isFalse();
        assertThat(config.attentionBias()).isFalse();
        assertThat(config.unsupportedFeatures()).isEmpty();
    }

    @Test
    void anUnknownArchitectureIsRefusedListingTheSupportedOnes()
    {
        assertThatThrownBy(() -> read("{\"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 50257}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir.resolve("config.json") + ": architecture GPT2LMHeadModel is not supported; supported: "
                        + "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM");
        assertThatThrownBy(() -> read("{\"vocab_size\": 50257}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("\"architectures\" must be a non-empty array of strings, was null");
    }

    @Test
    void aMissingOrMistypedShapeFieldIsRefusedNamingIt()
    {
        assertThatThrownBy(() -> read("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"num_attention_heads\": 4}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir.resolve("config.json") + ": \"vocab_size\" is missing; it is required");
        assertThatThrownBy(() -> read("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64.5, \"num_attention_heads\": 4}"))
                .hasMessage(dir.resolve("config.json") + ": \"hidden_size\" must be an integer from 1 to 2147483647, was 64.5");
    }

    @Test
    void anActivationOtherThanSiluIsRefused()
    {
        assertThatThrownBy(() -> read("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_act\": \"gelu\"}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir.resolve("config.json") + ": hidden_act is \"gelu\"; the engine's MLP is SwiGLU, which needs silu");
    }

    @Test
    void aConfigThatIsNotAJsonObjectIsRefused()
    {
        assertThatThrownBy(() -> read("[1]"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(dir.resolve("config.json") + ": expected a JSON object at the top level");
    }

    @Test
    void transformers5RopeParametersGiveTheThetaAndTheScaling()
    {
        HfModelConfig scaled = read("""
                {"architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "hidden_size": 2048, "num_hidden_layers": 16,
                 "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192, "max_position_embeddings": 131072,
                 "rope_parameters": {"rope_theta": 500000.0, "rope_type": "llama3", "factor": 32.0}}
                """);
        assertThat(scaled.ropeTheta()).isEqualTo(500000.0);
        assertThat(scaled.ropeScaling()).containsEntry("rope_type", "llama3").containsEntry("factor", new BigDecimal("32.0"));

        HfModelConfig plain = read("""
                {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936, "hidden_size": 1024, "num_hidden_layers": 28,
                 "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
                 "max_position_embeddings": 40960, "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"}}
                """);
        assertThat(plain.ropeTheta()).isEqualTo(1_000_000.0);
        assertThat(plain.ropeScaling()).isEmpty();
    }
}
