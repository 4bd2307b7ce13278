package io.handoff.dist;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff demo} from the distribution: a prefill, a decode and a router as real processes of the
 * tarball's launcher, checked against a colocated engine, on each transport and backend.
 */
class DemoIT
{
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final Pattern LOGS = Pattern.compile("server logs: (\\S+)");

    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({"mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp", "mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm",
            "mori, -Dhandoff.plugins.mori.forward-sync=true, shm"})
    void aDisaggregatedRunMatchesTheColocatedEngineAndLeaksNoPage(String backend, String setting, String transport)
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "demo", "--json", "--requests", "8", "--concurrency", "4", "--max-new-tokens", "8",
                "--transfer-backend", backend, setting);

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode report = JSON.readTree(run.stdout());
        assertThat(report.get("requests").asInt()).isEqualTo(8);
        assertThat(report.get("completed").asInt()).as(run.describe()).isEqualTo(8);
        assertThat(report.get("failed").asInt()).isZero();
        assertThat(report.get("exact_match").asDouble()).as(run.describe()).isEqualTo(1.0);
        assertThat(report.get("distinct_output_tokens").asInt()).isGreaterThanOrEqualTo(4);
        assertThat(report.get("transfer_backend").asText()).isEqualTo(backend);
        assertThat(report.get("transport").asText()).isEqualTo(transport);
        assertThat(report.get("early_send").get("enabled").asBoolean()).isTrue();
        assertThat(report.get("kv_bytes_transferred").asLong()).isPositive();
        assertThat(report.get("ttft_ms").get("p50").isNumber()).isTrue();
        assertThat(report.get("colocated_ttft_ms").get("p50").isNumber()).isTrue();
        assertThat(report.get("pages_leaked").get("prefill").asInt()).isZero();
        assertThat(report.get("pages_leaked").get("decode").asInt()).isZero();
        Path logs = Path.of(report.get("log_dir").asText());
        assertThat(logs.resolve("prefill.log")).exists();
        assertThat(Files.readString(logs.resolve("decode.log"))).contains("stopped");
    }

    @Test
    void autoKeepsEarlySendOffForMoriWithoutForwardSyncAndSaysWhy()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "demo", "--json", "--requests", "2", "--concurrency", "2", "--max-new-tokens", "4",
                "--transfer-backend", "mori", "-Dhandoff.plugins.mori.forward-sync=false");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode earlySend = JSON.readTree(run.stdout()).get("early_send");
        assertThat(earlySend.get("requested").asText()).isEqualTo("auto");
        assertThat(earlySend.get("enabled").asBoolean()).isFalse();
        assertThat(earlySend.get("reason").asText()).isEqualTo("auto: transfer backend 'mori' declares neither FORWARD_SYNC nor STAGING: "
                + "it does not promise to read a page only after the forward that writes it");
    }

    @Test
    void aServerThatRefusesToStartFailsTheDemoWithItsMessage()
            throws Exception
    {
        // mori without its forward sync is unsafe for early send; "on" is refused by both servers, which start together:
        // the demo reports whichever exits first, with the end of that one's log.
        Launcher.Run run = Launcher.run(temp, "demo", "--transfer-backend", "mori", "-Dhandoff.plugins.mori.forward-sync=false",
                "-Dhandoff.disaggregation.early-send-cached-prefix=on", "--startup-timeout", "60s");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stdout()).isEmpty();
        Matcher failed = Pattern.compile("handoff demo: (prefill|decode) exited with code \\d+ before it became healthy; the last lines of \\S+(prefill|decode)\\.log:")
                .matcher(run.stderr());
        assertThat(failed.find()).as(run.describe()).isTrue();
        assertThat(failed.group(2)).isEqualTo(failed.group(1));
        assertThat(run.stderr()).contains("transfer backend 'mori' lacks FORWARD_SYNC and STAGING");
        Matcher logs = LOGS.matcher(run.stderr());
        assertThat(logs.find()).as(run.describe()).isTrue();
        assertThat(Path.of(logs.group(1)).resolve(failed.group(1) + ".log")).exists();
    }
}
