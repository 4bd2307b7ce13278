package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.ModelConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a prefill sends per prompt token, measured by {@code handoff demo} on one-token pages: MLA with DeepSeek-V2/V3's
 * latent (kv_lora_rank 512 + rope 64 in one row) against grouped-query attention with Llama-3-8B's 8 KV heads of 128
 * (a key and a value row each), over the same layers in the same KV dtype. The report's bytes per prompt token are the
 * pool's per-token bytes exactly, and their ratio is the widths' (2 x 8 x 128) / (512 + 64) = 3.56.
 */
class KvBytesPerTokenIT
{
    private static final int LAYERS = 3;

    @TempDir
    Path temp;

    @Test
    void mlaSendsItsLatentPerTokenAndGqaItsKeysAndValuesAlmostFourTimesAsMany()
            throws Exception
    {
        Path mlaModel = temp.resolve("deepseek-latent-512-64");
        Path gqaModel = temp.resolve("llama-gqa-8x128");
        DeepseekConfig mla = KvShapedCheckpoints.deepseekLatent(mlaModel, 5L, LAYERS);
        ModelConfig gqa = KvShapedCheckpoints.llamaGqa(gqaModel, 5L, LAYERS);

        JsonNode mlaReport = demo(mlaModel);
        JsonNode gqaReport = demo(gqaModel);

        // both pools hold F16, a checkpoint's default KV dtype
        assertThat(mlaReport.get("kv").get("dtype").asText()).isEqualTo("F16");
        assertThat(gqaReport.get("kv").get("dtype").asText()).isEqualTo("F16");
        long mlaPerToken = (long) LAYERS * (mla.kvLoraRank() + mla.qkRopeHeadDim()) * 2;
        long gqaPerToken = (long) LAYERS * 2 * gqa.kvHeads() * gqa.headDim() * 2;
        assertThat(mlaReport.get("kv").get("heads").asInt()).isEqualTo(1);
        assertThat(gqaReport.get("kv").get("heads").asInt()).isEqualTo(8);
        assertThat(mlaReport.get("kv_bytes_per_prompt_token").asDouble()).isEqualTo(mlaPerToken).isEqualTo(mlaReport.get("kv").get("bytes_per_token").asDouble());
        assertThat(gqaReport.get("kv_bytes_per_prompt_token").asDouble()).isEqualTo(gqaPerToken).isEqualTo(gqaReport.get("kv").get("bytes_per_token").asDouble());
        double ratio = gqaReport.get("kv_bytes_transferred").asDouble() / gqaReport.get("prompt_tokens").asDouble()
                / (mlaReport.get("kv_bytes_transferred").asDouble() / mlaReport.get("prompt_tokens").asDouble());
        assertThat(ratio).isEqualTo(2.0 * 8 * 128 / (512 + 64));
        System.out.printf(Locale.ROOT, "KV bytes per prompt token over %d layers, F16: MLA 512+64 %d (%d per layer), GQA 8x128 %d (%d per layer), "
                        + "ratio %.3f%n", LAYERS, mlaPerToken, mlaPerToken / LAYERS, gqaPerToken, gqaPerToken / LAYERS, ratio);
    }

    private JsonNode demo(Path model)
            throws Exception
    {
        // the decode's prefix cache off: every prompt token's KV moves, which is what is counted here
        return PdDemo.runBitExact(temp, model, 2, "mooncake", "-Dhandoff.plugins.mooncake.transport=shm", "shm", 1,
                "-Dhandoff.disaggregation.decode-prefix-cache=false");
    }
}
