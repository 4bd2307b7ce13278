package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.DeepseekConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.runtime.ModelSource;
import io.handoff.demo.Workload;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Options;
import io.handoff.testkit.model.SeededDeepseekCheckpoint.Version;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Disaggregation on DeepSeek-V2/V3 checkpoints written by the test (MLA with mixture-of-experts layers after a dense one):
 * {@code handoff demo --model-path} runs a prefill, a decode and a router as processes of the distribution and checks
 * every output against the colocated engine's, on every transfer backend, with both MLA attention plugins, chunked
 * prefill, one-token and 64-token pages. The prefill moves the compressed latent and rope key only: its bytes are the
 * prompt's token slots times {@code layers x (kv_lora_rank + qk_rope_head_dim)} elements, never the per-head K and V.
 */
class DeepseekDisaggregationIT
{
    private static final long SEED = 16L;
    /** The demo's default seed: the workload the report's requests came from. */
    private static final long WORKLOAD_SEED = 0L;

    @TempDir
    Path temp;

    // Each backend and transport once; each attention plugin, page size and checkpoint kind on a two-sided (mooncake tcp,
    // nixl tcp) and a one-sided (mooncake shm, mori, nixl posix) transfer. V2: softmax routing, plain q_proj, no YaRN;
    // V3: sigmoid routing with correction bias and groups, low-rank queries, YaRN.
    @ParameterizedTest(name = "{5} on {0} {2} with {3}, page size {4}")
    @CsvSource({
            "mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp, aiter, 1, V2",
            "mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm, triton, 64, V3",
            "mori, -Dhandoff.plugins.mori.forward-sync=true, shm, triton, 1, V2",
            "nixl, -Dhandoff.plugins.nixl.tls=tcp, ucx:tcp, aiter, 64, V3",
            "nixl, '-Dhandoff.plugins.nixl.tls=posix,self', 'ucx:posix,self', aiter, 1, V3"})
    void aDisaggregatedDemoOnADeepseekCheckpointMatchesTheColocatedEngineAndMovesTheLatentOnly(String backend, String setting,
            String transport, String attention, int pageSize, Version version)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        Path model = temp.resolve("tiny-deepseek-" + version.name().toLowerCase(java.util.Locale.ROOT));
        DeepseekConfig config = SeededDeepseekCheckpoint.write(model, options(version));

        // the decode's prefix cache off: every prompt goes over whole, which is what is counted below
        JsonNode report = PdDemo.runBitExact(temp, model, backend, setting, transport, pageSize, "--attention", attention,
                "-Dhandoff.disaggregation.decode-prefix-cache=false");

        assertThat(report.get("attention").asText()).isEqualTo(attention);
        JsonNode kv = report.get("kv");
        assertThat(kv.get("layout").asText()).isEqualTo("MLA");
        assertThat(kv.get("heads").asInt()).as("one latent head").isEqualTo(1);
        assertThat(kv.get("head_dim").asInt()).isEqualTo(config.kvLoraRank() + config.qkRopeHeadDim());
        long perToken = latentBytesPerToken(config, kv.get("dtype").asText());
        assertThat(kv.get("bytes_per_token").asLong()).isEqualTo(perToken).isLessThan(decompressedBytesPerToken(config, kv.get("dtype").asText()));
        // every prompt the prefill admitted (the warm-up first) went over once, in whole pages
        List<Integer> promptLengths = promptLengths(model);
        assertThat(report.get("prompt_tokens").asLong()).isEqualTo(promptLengths.stream().mapToLong(Integer::longValue).sum());
        long slots = promptLengths.stream().mapToLong(length -> (long) Math.ceilDiv(length, pageSize) * pageSize).sum();
        assertThat(report.get("kv_bytes_transferred").asLong()).isEqualTo(slots * perToken);
    }

    /** A served DeepSeek checkpoint tells a router and an operator that its KV is one latent row per token and layer. */
    @Test
    void bootstrapOnADeepseekCheckpointDescribesOneLatentHead()
            throws Exception
    {
        Path model = temp.resolve("tiny-deepseek-v3");
        DeepseekConfig config = SeededDeepseekCheckpoint.write(model, options(Version.V3));

        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "--model-path", model.toString(), "-Dhandoff.kv.page-size=64")) {
            JsonNode kv = ServerProcess.json(prefill.get("/bootstrap").body()).get("kv");

            assertThat(kv.get("layout").asText()).isEqualTo("MLA");
            assertThat(kv.get("heads").asInt()).isEqualTo(1);
            assertThat(kv.get("head_dim").asInt()).isEqualTo(config.kvLoraRank() + config.qkRopeHeadDim());
            assertThat(kv.get("v_head_dim").asInt()).as("the value is the latent prefix").isEqualTo(config.kvLoraRank());
            assertThat(kv.get("values_in_key_row").asBoolean()).isTrue();
            assertThat(kv.get("layers").asInt()).isEqualTo(config.layers());
            // a checkpoint's KV defaults to F16, as llama.cpp's does
            assertThat(kv.get("dtype").asText()).isEqualTo("F16");
            assertThat(kv.get("page_size").asInt()).isEqualTo(64);
            assertThat(kv.get("bytes_per_token").asLong()).isEqualTo(latentBytesPerToken(config, "F16"));
            assertThat(kv.get("bytes_per_page").asLong()).isEqualTo(64 * latentBytesPerToken(config, "F16"));
        }
    }

    private static Options options(Version version)
    {
        return version == Version.V2 ? Options.v2(SEED) : Options.v3(SEED).withYarn(true);
    }

    /** MLA's KV: per layer one row of the latent and the shared rope key. */
    private static long latentBytesPerToken(DeepseekConfig config, String dtype)
    {
        return (long) config.layers() * (config.kvLoraRank() + config.qkRopeHeadDim()) * elementBytes(dtype);
    }

    /** What a cache of decompressed keys and values would hold: per layer and head a key of nope + rope and a value. */
    private static long decompressedBytesPerToken(DeepseekConfig config, String dtype)
    {
        return (long) config.layers() * config.heads() * (config.qkNopeHeadDim() + config.qkRopeHeadDim() + config.vHeadDim()) * elementBytes(dtype);
    }

    private static int elementBytes(String dtype)
    {
        return switch (dtype) {
            case "F32" -> 4;
            case "F16", "BF16" -> 2;
            default -> throw new AssertionError("unexpected KV dtype " + dtype);
        };
    }

    /** The demo's prompts in the order it sends them, the warm-up first, as the server's tokenizer counts them. */
    private static List<Integer> promptLengths(Path model)
    {
        Tokenizer tokenizer = ModelSource.open(model, 4096).tokenizer();
        Workload workload = Workload.fewShot(PdDemo.REQUESTS, WORKLOAD_SEED);
        List<Integer> lengths = new ArrayList<>();
        lengths.add(tokenizer.encodePrompt(workload.warmUpPrompt()).length);
        workload.prompts().forEach(prompt -> lengths.add(tokenizer.encodePrompt(prompt).length));
        return lengths;
    }
}
