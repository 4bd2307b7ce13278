package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff chaos} from the distribution, small and bounded: aborts at every phase and failed, stalled and
 * corrupted transfers, and still nothing divergent, nothing hung and every page back.
 */
class ChaosIT
{
    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({"mooncake, -Dhandoff.plugins.mooncake.transport=tcp", "mori, -Dhandoff.plugins.mori.forward-sync=true"})
    void aSoakWithAbortsAndTransferFaultsEndsCleanAndItsOutcomesAddUp(String backend, String setting)
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "chaos", "--json", "--requests", "40", "--abort-rate", "0.2", "--fail-rate", "0.05",
                "--concurrency", "8", "--settle-timeout", "15s", "--transfer-backend", backend, setting);

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode report = ServerProcess.json(run.stdout());
        long failed = sum(report.get("failed"));
        assertThat(report.get("requests").asInt()).isEqualTo(40);
        assertThat(report.get("completed").asLong() + report.get("aborted").asLong() + failed).isEqualTo(40);
        assertThat(report.get("completed").asLong()).as(run.describe()).isGreaterThanOrEqualTo(20);
        assertThat(report.get("aborted").asLong()).isPositive();
        assertThat(report.get("divergent").asInt()).as(run.describe()).isZero();
        assertThat(report.get("hung").asInt()).as(run.describe()).isZero();
        assertThat(sum(report.get("pages_leaked"))).as(run.describe()).isZero();
        assertThat(report.get("pages_leaked").size()).isEqualTo(2);
        assertThat(report.get("quarantined_now").asInt()).isZero();
        assertThat(report.get("retried").isObject()).isTrue();
        assertThat(report.get("clean").asBoolean()).isTrue();
        assertThat(report.get("setup").get("prefill_faults").get(0).asText()).isEqualTo("transfer-before-chunk rate=0.016667 seed=1 fail");
        assertThat(report.get("setup").get("decode_faults").get(0).asText()).isEqualTo("decode-before-verify rate=0.016667 seed=3 corrupt");
        assertThat(report.get("throughput").get("requests_per_s").asDouble()).isPositive();
        assertThat(run.stderr()).contains("handoff chaos: 40/40");
    }

    @Test
    void badOptionsAreRefusedWithWhatToDo()
            throws Exception
    {
        Launcher.Run rate = Launcher.run(temp, "chaos", "--abort-rate", "1.5");
        assertThat(rate.exitCode()).isEqualTo(2);
        assertThat(rate.stderr()).contains("--abort-rate must be a fraction in [0, 1], got 1.5");

        Launcher.Run kill = Launcher.run(temp, "chaos", "--kill-restart", "router");
        assertThat(kill.exitCode()).isEqualTo(2);
        assertThat(kill.stderr()).contains("--kill-restart must be none, prefill or decode, got 'router'");
    }

    private static long sum(JsonNode node)
    {
        if (node.isNumber()) {
            return node.asLong();
        }
        long sum = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            sum += it.next().getValue().asLong();
        }
        return sum;
    }
}
