package io.handoff.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.cli.Main;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** handoff bench compute's decode after a long prompt: the length it decoded after in each row, a length past the model refused. */
class BenchComputeCommandTest
{
    @Test
    void decodeRunsAfterTheDecodeContextAndSaysSo()
            throws Exception
    {
        CliRun run = CliRun.of("bench", "compute", "--model", "tiny-gqa", "--batch", "1", "--prompt-len", "8", "--decode-tokens", "4",
                "--decode-context", "300", "--rounds", "1", "--threads", "1", "--json");

        assertThat(run.exitCode()).as(run.stderr()).isEqualTo(Main.OK);
        JsonNode row = new ObjectMapper().readTree(run.stdout()).get(0);
        assertThat(row.get("decode_context").asInt()).isEqualTo(300);
        assertThat(row.get("decode_tokens_per_s").asDouble()).isPositive();
    }

    @Test
    void aDecodeContextPastTheModelsIsRefusedNamingBoth()
    {
        CliRun run = CliRun.of("bench", "compute", "--model", "tiny-gqa", "--batch", "1", "--prompt-len", "8", "--decode-tokens", "4",
                "--decode-context", "5000", "--rounds", "1", "--threads", "1");

        assertThat(run.exitCode()).isNotEqualTo(Main.OK);
        assertThat(run.stderr()).contains("--decode-context 5000 plus --decode-tokens 4 is past tiny-gqa's context of 4096 positions");
    }
}
