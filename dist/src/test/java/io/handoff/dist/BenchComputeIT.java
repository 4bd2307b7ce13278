package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff bench attention} and {@code handoff bench scheduler} from the distribution, at tiny sizes: they run,
 * their JSON has every field with a sane value, {@code --out} writes the report, and bad options get clear errors.
 * Nothing here depends on how fast the machine is.
 */
class BenchComputeIT
{
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({"triton, tiny-mla, f32, auto, F32", "aiter, tiny-mla, bf16, auto, F32", "triton, tiny-gqa, f16, auto, F32",
            "triton, tiny-gqa, f16, llama-cpp, LLAMA_CPP_F16"})
    void benchAttentionReportsDecodeBandwidthAgainstTheSameRunsReadBandwidth(String plugin, String model, String dtype, String arithmetic,
            String computed)
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "bench", "attention", "--attention", plugin, "--model", model, "--kv-dtype", dtype,
                "--batch", "2", "--seq-len", "100,300", "--extend-tokens", "20", "--rounds", "1", "--stream-mib", "16", "--json",
                "-Dhandoff.attention.arithmetic=" + arithmetic);

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode result = JSON.readTree(run.stdout());
        assertThat(result.get("plugin").asText()).isEqualTo(plugin);
        assertThat(result.get("arithmetic").asText()).as("the arithmetic the engine would run").isEqualTo(computed);
        assertThat(result.get("model").asText()).isEqualTo(model);
        assertThat(result.get("kv_dtype").asText()).isEqualTo(dtype.toUpperCase());
        assertThat(result.get("threads").asInt()).isPositive();
        assertThat(result.get("read_bandwidth").get("gbps").asDouble()).isPositive();
        JsonNode rows = result.get("results");
        assertThat(rows).hasSize(2);
        for (int i = 0; i < 2; i++) {
            JsonNode row = rows.get(i);
            int seqLen = i == 0 ? 100 : 300;
            assertThat(row.get("seq_len").asInt()).isEqualTo(seqLen);
            assertThat(row.get("batch").asInt()).isEqualTo(2);
            assertThat(row.get("kv_bytes").asLong()).as("K and V bytes of every sequence and layer")
                    .isEqualTo(expectedKvBytes(model, dtype, seqLen));
            assertThat(row.get("attention_gbps").asDouble()).isPositive();
            assertThat(row.get("read_bandwidth_gbps").asDouble()).isPositive();
            assertThat(row.get("ratio_read_bandwidth").asDouble()).isPositive().isFinite();
            assertThat(row.get("extend_tokens_per_s").asDouble()).isPositive();
            assertThat(row.get("decode_matches_extend").asBoolean()).as("decode of the last position equals extend of it").isTrue();
        }
    }

    /** 2 sequences x 4 layers x the row bytes: tiny-mla's latent row is 128 + 32 elements; tiny-gqa's K and V rows 2 heads x 32 each. */
    private static long expectedKvBytes(String model, String dtype, int seqLen)
    {
        int elementBytes = dtype.equals("f32") ? 4 : 2;
        int rowElements = model.equals("tiny-mla") ? 160 : 2 * 2 * 32;
        return 2L * seqLen * 4 * rowElements * elementBytes;
    }

    @Test
    void benchAttentionOutWritesTheReportWithItsChart()
            throws Exception
    {
        Path out = temp.resolve("attention-report");
        Launcher.Run run = Launcher.run(temp, "bench", "attention", "--attention", "triton", "--model", "tiny-mla", "--batch", "1",
                "--seq-len", "64,128", "--extend-tokens", "8", "--rounds", "1", "--stream-mib", "8", "--out", out.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stdout()).contains("attention GB/s").contains("read GB/s");
        assertThat(JSON.readTree(out.resolve("report.json").toFile()).get("result").get("results")).hasSize(2);
        assertThat(Files.readString(out.resolve("report.html"))).contains("<svg").contains("attention GB/s vs sequence length")
                .contains("read bandwidth");
    }

    @Test
    void benchComputeReportsThroughputAndWhatTheRunHoldsInMemory()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "bench", "compute", "--model", "tiny-gqa", "--batch", "1", "--prompt-len", "32", "--decode-tokens", "4",
                "--rounds", "1", "--threads", "1", "--json");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode row = JSON.readTree(run.stdout()).get(0);
        assertThat(row.get("prefill_tokens_per_s").asDouble()).isPositive();
        assertThat(row.get("decode_tokens_per_s").asDouble()).isPositive();
        assertThat(row.get("threads").asInt()).isEqualTo(1);
        // the pool's pages are all touched when it is allocated, so they are resident
        assertThat(row.get("kv_pool_bytes").asLong()).isPositive();
        assertThat(row.get("resident_bytes").asLong()).isGreaterThan(row.get("kv_pool_bytes").asLong());
        assertThat(row.get("model_file_bytes").asLong()).as("a seeded preset has no file").isZero();
    }

    @Test
    void benchAttentionRefusesAnUnknownPluginAndANonPositiveSequenceLength()
            throws Exception
    {
        Launcher.Run unknown = Launcher.run(temp, "bench", "attention", "--attention", "no-such-kernel", "--seq-len", "64", "--stream-mib", "8");
        // --plugin: the old spelling, still read
        Launcher.Run zero = Launcher.run(temp, "bench", "attention", "--plugin", "triton", "--seq-len", "64,0");
        Launcher.Run layout = Launcher.run(temp, "bench", "attention", "--attention", "aiter", "--model", "tiny-gqa", "--seq-len", "64",
                "--stream-mib", "8");

        assertThat(unknown.exitCode()).as(unknown.describe()).isEqualTo(1);
        assertThat(unknown.stderr()).contains("no attention backend 'no-such-kernel' (--attention); available: ").contains("triton");
        assertThat(zero.exitCode()).as(zero.describe()).isEqualTo(2);
        assertThat(zero.stderr()).contains("--seq-len values must be positive, was 0");
        assertThat(layout.exitCode()).as(layout.describe()).isEqualTo(1);
        assertThat(layout.stderr()).contains("attention backend 'aiter' does not support the GQA layout");
    }

    @Test
    void benchSchedulerReportsOverheadAsAFractionOfTheModelsStepTime()
            throws Exception
    {
        Path out = temp.resolve("scheduler-report");
        Launcher.Run run = Launcher.run(temp, "bench", "scheduler", "--batch", "2,4", "--prompt-len", "24", "--shared-prefix", "16",
                "--decode-tokens", "4", "--waves", "2", "--rounds", "1", "--json", "--out", out.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode result = JSON.readTree(run.stdout());
        assertThat(result.get("model").asText()).isEqualTo("tiny-mla");
        JsonNode rows = result.get("results");
        assertThat(rows).hasSize(2);
        for (int i = 0; i < 2; i++) {
            JsonNode row = rows.get(i);
            assertThat(row.get("batch").asInt()).isEqualTo(i == 0 ? 2 : 4);
            assertThat(row.get("scheduler_us_per_step").asDouble()).isPositive();
            assertThat(row.get("model_step_us").asDouble()).isPositive();
            assertThat(row.get("overhead_fraction").asDouble()).isPositive().isFinite();
            assertThat(row.get("model_tokens_per_step").asDouble()).isPositive();
            assertThat(row.get("cached_prompt_fraction").asDouble()).as("the shared prefix comes from the radix cache").isPositive();
        }
        assertThat(Files.readString(out.resolve("report.html"))).contains("<svg").contains("scheduler overhead vs batch");
        assertThat(out.resolve("report.json")).isNotEmptyFile();
    }

    @Test
    void benchSchedulerRefusesABatchBelowOne()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "bench", "scheduler", "--batch", "0");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(2);
        assertThat(run.stderr()).contains("--batch values must be at least 1, was 0");
    }
}
