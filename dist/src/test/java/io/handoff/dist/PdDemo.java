package io.handoff.dist;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff demo --json} on a checkpoint directory, disaggregated on one transfer backend with chunked prefill, and
 * what every such run must show: each request completed with exactly the colocated engine's tokens, early send fired on
 * the prompts' earlier chunks, and no page was left behind on either side.
 */
final class PdDemo
{
    static final int REQUESTS = 4;
    /** The demo's prompts (a shared few-shot prefix plus a question) take several chunks of this many tokens each. */
    static final int CHUNK = 64;
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private PdDemo() {}

    /**
     * Runs the demo on {@code model} with {@code backend} and its transport {@code setting} (reported as {@code transport}),
     * {@code pageSize}-token pages and any {@code extra} arguments, checks the run, and returns its report.
     */
    static JsonNode runBitExact(Path temp, Path model, String backend, String setting, String transport, int pageSize, String... extra)
            throws Exception
    {
        return runBitExact(temp, model, REQUESTS, backend, setting, transport, pageSize, extra);
    }

    /** The same with {@code requests} requests. */
    static JsonNode runBitExact(Path temp, Path model, int requests, String backend, String setting, String transport, int pageSize,
            String... extra)
            throws Exception
    {
        List<String> args = new ArrayList<>(List.of("demo", "--json", "--requests", Integer.toString(requests), "--concurrency", "2",
                "--max-new-tokens", "8", "--model-path", model.toString(), "--transfer-backend", backend, setting,
                "-Dhandoff.kv.page-size=" + pageSize, "-Dhandoff.scheduler.chunked-prefill-size=" + CHUNK));
        args.addAll(List.of(extra));
        Launcher.Run run = Launcher.run(temp, args.toArray(String[]::new));

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode report = JSON.readTree(run.stdout());
        assertThat(report.get("model").asText()).isEqualTo(model.getFileName().toString());
        assertThat(report.get("transfer_backend").asText()).isEqualTo(backend);
        assertThat(report.get("transport").asText()).as(run.describe()).isEqualTo(transport);
        assertThat(report.get("requests").asInt()).isEqualTo(requests);
        assertThat(report.get("completed").asInt()).as(run.describe()).isEqualTo(requests);
        assertThat(report.get("failed").asInt()).as(run.describe()).isZero();
        assertThat(report.get("exact_match").asDouble()).as(run.describe()).isEqualTo(1.0);
        assertThat(report.get("distinct_output_tokens").asInt()).as(run.describe()).isGreaterThanOrEqualTo(Math.min(requests, 4));
        assertThat(report.get("kv_bytes_transferred").asLong()).isPositive();
        // Bytes sent before a prompt's last forward: the prompts were prefilled in several chunks, and early send ran.
        assertThat(report.get("early_send").get("enabled").asBoolean()).as(run.describe()).isTrue();
        assertThat(report.get("kv_early_bytes").asLong()).as(run.describe()).isPositive();
        assertThat(report.get("pages_leaked").get("prefill").asInt()).as(run.describe()).isZero();
        assertThat(report.get("pages_leaked").get("decode").asInt()).as(run.describe()).isZero();
        return report;
    }
}
