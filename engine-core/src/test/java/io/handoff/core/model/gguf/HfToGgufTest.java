package io.handoff.core.model.gguf;

import io.handoff.core.model.hf.HfModelConfig;
import io.handoff.core.kv.PagedKvCache;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.WeightSource;
import io.handoff.core.model.hf.HfModelConfig.HfArchitecture;
import io.handoff.core.runtime.ModelSource;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Hugging Face checkpoint written as GGUF ({@link HfToGguf}) is the same model: read back through the GGUF loader (which
 * undoes llama.cpp's query and key row order), it tokenizes prompts and computes logits exactly as the directory does.
 */
class HfToGgufTest
{
    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}, tied {1}")
    @CsvSource({"LLAMA, false", "LLAMA, true", "QWEN2, false", "QWEN3, true"})
    void theGgufFileIsTheSameModelBitForBit(HfArchitecture architecture, boolean tied)
            throws Exception
    {
        Path checkpoint = dir.resolve("ckpt-" + architecture + "-" + tied);
        SeededCheckpoint.write(checkpoint, 5L, tied, architecture, RopeScaling.NONE);
        Path gguf = dir.resolve(architecture + "-" + tied + ".gguf");
        HfToGguf.convert(checkpoint, gguf);
        try (GgufFile file = GgufFile.open(gguf)) {
            assertThat(file.metadata().string("general.architecture")).isEqualTo(architecture == HfArchitecture.LLAMA ? "llama"
                    : architecture.name().toLowerCase(java.util.Locale.ROOT));
            assertThat(file.metadata().string("tokenizer.ggml.pre")).isEqualTo("llama-bpe");
            assertThat(file.tensor("output.weight").isPresent()).isEqualTo(!tied);
        }
        try (ModelSource fromDirectory = ModelSource.open(checkpoint, 2048); ModelSource fromGguf = ModelSource.open(gguf, 2048)) {
            String text = "the theory in a thin tin";
            int[] prompt = fromDirectory.tokenizer().encodePrompt(text);
            assertThat(fromGguf.tokenizer().encodePrompt(text)).isEqualTo(prompt);
            assertThat(fromGguf.tokenizer().eosTokenIds()).isEqualTo(fromDirectory.tokenizer().eosTokenIds());
            float[][] expected = logits(fromDirectory.config(), fromDirectory.weights(), prompt);
            assertThat(logits(fromGguf.config(), fromGguf.weights(), prompt)).isDeepEqualTo(expected);
        }
    }

    private static float[][] logits(ModelConfig config, WeightSource weights, int[] prompt)
    {
        try (Transformer model = new Transformer(config, weights, 1); Arena arena = Arena.ofConfined()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, config.layers(), 4, 16, KvDtype.F32, config.kvKeyRowElements(), config.kvValueRowElements(),
                    config.kvValuesInKeyRow());
            ReferenceAttention attention = new ReferenceAttention(config.attentionGeometry(), kv);
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, IntStream.range(0, prompt.length).toArray()).build(attention::numKvSplits);
            return model.forwardAllPositions(batch, kv, attention, Transformer.LayerHook.NONE);
        }
    }
}
