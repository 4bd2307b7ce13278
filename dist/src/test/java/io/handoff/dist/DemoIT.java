package io.handoff.dist;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff demo} from the distribution: its servers are real processes of the tarball's launcher.
 * Colocated servers stand in for the prefill and the decode ({@code --colocated-stand-ins}), so the
 * supervision, the streaming client, the comparison and the report are checked with or without a
 * disaggregated server.
 */
class DemoIT
{
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final Pattern LOGS = Pattern.compile("server logs: (\\S+)");

    @TempDir
    Path temp;

    @Test
    void aRunPrintsOneJsonObjectAndEveryOutputMatchesTheColocatedEngine()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "demo", "--colocated-stand-ins", "--json", "--requests", "4", "--concurrency", "2",
                "--max-new-tokens", "4", "--model", "tiny-gqa");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode report = JSON.readTree(run.stdout());
        assertThat(report.get("requests").asInt()).isEqualTo(4);
        assertThat(report.get("completed").asInt()).as(run.describe()).isEqualTo(4);
        assertThat(report.get("failed").asInt()).isZero();
        assertThat(report.get("exact_match").asDouble()).as(run.describe()).isEqualTo(1.0);
        assertThat(report.get("model").asText()).isEqualTo("tiny-gqa");
        assertThat(report.get("transfer_backend").asText()).isEqualTo("mooncake");
        assertThat(report.get("ttft_ms").get("p50").isNumber()).isTrue();
        assertThat(report.get("colocated_ttft_ms").get("p50").isNumber()).isTrue();
        assertThat(report.get("pages_leaked").get("prefill").asInt()).isZero();
        assertThat(report.get("pages_leaked").get("decode").asInt()).isZero();
        Path logs = Path.of(report.get("log_dir").asText());
        assertThat(logs.resolve("prefill.log")).exists();
        assertThat(Files.readString(logs.resolve("decode.log"))).contains("stopped");
    }

    @Test
    void aServerThatRefusesToStartFailsTheDemoWithItsMessage()
            throws Exception
    {
        // mori without its forward sync is unsafe for early send; "on" must be refused by the prefill.
        Launcher.Run run = Launcher.run(temp, "demo", "--transfer-backend", "mori", "-Dhandoff.plugins.mori.forward-sync=false",
                "-Dhandoff.disaggregation.early-send-cached-prefix=on", "--startup-timeout", "60");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stdout()).isEmpty();
        assertThat(run.stderr()).containsPattern("handoff demo: prefill exited with code \\d+ before it became healthy; the last lines of \\S+prefill.log:");
        Matcher logs = LOGS.matcher(run.stderr());
        assertThat(logs.find()).as(run.describe()).isTrue();
        assertThat(Path.of(logs.group(1)).resolve("prefill.log")).exists();
    }
}
