package io.handoff.core.runtime;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SyntheticWeights;
import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.spi.attention.AttentionArithmetic;
import io.handoff.spi.attention.AttentionCapabilities;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code handoff.attention.arithmetic}: auto follows the weights where the backend can, the explicit values win (a backend
 * that cannot compute one refuses it when it starts), anything else is refused by name.
 */
class AttentionArithmeticSettingTest
{
    @TempDir
    Path dir;

    private static final AttentionCapabilities BOTH = new AttentionCapabilities(Set.of(KvLayout.GQA), 1, 256, Set.of(KvDtype.F32), true, true,
            Set.of(AttentionArithmetic.values()));
    private static final AttentionCapabilities F32_ONLY = new AttentionCapabilities(Set.of(KvLayout.GQA), 1, 256, Set.of(KvDtype.F32), true, true);

    @Test
    void autoAttendsAsLlamaCppExactlyWhenTheMatricesRoundTheirInputsAsLlamaCppDoes()
    {
        Path q8 = gguf(GgufTensorType.Q8_0);
        try (ModelSource rounding = ModelSource.open(q8, 1024, true);
                ModelSource exact = ModelSource.open(q8, 1024, false);
                ModelSource f32 = ModelSource.open(gguf(GgufTensorType.F32), 1024, true)) {
            assertThat(ComputeEngine.attentionArithmetic(setting("auto"), rounding, BOTH)).isEqualTo(AttentionArithmetic.LLAMA_CPP_F16);
            assertThat(ComputeEngine.attentionArithmetic(setting("auto"), rounding, F32_ONLY)).as("a backend without it").isEqualTo(AttentionArithmetic.F32);
            assertThat(ComputeEngine.attentionArithmetic(setting("auto"), exact, BOTH)).isEqualTo(AttentionArithmetic.F32);
            assertThat(ComputeEngine.attentionArithmetic(setting("auto"), f32, BOTH)).isEqualTo(AttentionArithmetic.F32);
            assertThat(ComputeEngine.attentionArithmetic(setting("f32"), rounding, BOTH)).isEqualTo(AttentionArithmetic.F32);
            assertThat(ComputeEngine.attentionArithmetic(setting("llama-cpp"), f32, BOTH)).isEqualTo(AttentionArithmetic.LLAMA_CPP_F16);
        }
        ModelConfig preset = ModelConfig.byName("tiny-gqa");
        ModelSource seeded = new ModelSource(preset, new SyntheticWeights(preset.weightsSeed()), new ByteTokenizer());
        assertThat(ComputeEngine.attentionArithmetic(setting("auto"), seeded, BOTH)).isEqualTo(AttentionArithmetic.F32);
        assertThatThrownBy(() -> ComputeEngine.attentionArithmetic(setting("f16"), seeded, BOTH))
                .hasMessage("handoff.attention.arithmetic = 'f16' is not one of auto | f32 | llama-cpp");
    }

    private static Config setting(String value)
    {
        return ConfigFactory.parseString("handoff.attention.arithmetic = \"" + value + "\"");
    }

    private Path gguf(GgufTensorType type)
    {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Integer> types = new ArrayList<>(List.of(2, 3, 3));
        List<Float> scores = new ArrayList<>(List.of(0f, 0f, 0f));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            types.add(6);
            scores.add(0f);
        }
        return SeededLlamaGguf.write(dir.resolve(type + ".gguf"), new GgufVocabulary("llama", "default", tokens, scores, types, List.of(), 1, 2, true),
                type, 5L);
    }
}
