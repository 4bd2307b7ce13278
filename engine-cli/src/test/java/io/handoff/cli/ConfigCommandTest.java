package io.handoff.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ConfigCommandTest
{
    @Test
    void strictRefusesAnUnknownKeyAndNamesTheOneMeant()
    {
        CliRun run = CliRun.of("config", "--strict", "-Dhandoff.kv.pagesize=1");

        assertThat(run.exitCode()).isEqualTo(Main.USAGE);
        assertThat(run.stderr()).contains("unknown configuration key 'handoff.kv.pagesize'", "did you mean 'handoff.kv.page-size'?");
    }

    @Test
    void withoutStrictAnUnknownKeyIsAWarningOnly()
    {
        CliRun run = CliRun.of("config", "--json", "-Dhandoff.kv.pagesize=1");

        assertThat(run.exitCode()).isEqualTo(Main.OK);
        assertThat(run.stdout()).contains("handoff.kv.page-size");
    }

    @Test
    void jsonGivesEverySettingWithItsOriginAndTheModelsKvPool()
            throws Exception
    {
        // tiny-gqa: 4 layers x 2 KV heads x 32 dims, K and V, f32 for a seeded preset
        CliRun run = CliRun.of("config", "--json", "--model", "tiny-gqa", "--kv-pool-memory", "1MiB", "-Dhandoff.kv.page-size=32");

        assertThat(run.exitCode()).as(run.stderr()).isEqualTo(Main.OK);
        JsonNode json = new ObjectMapper().readTree(run.stdout());
        assertThat(json.at("/settings/handoff.kv.page-size/value").asText()).isEqualTo("32");
        assertThat(json.at("/settings/handoff.kv.page-size/origin").asText()).isEqualTo("-D on the command line");
        assertThat(json.at("/settings/handoff.kv.pool-pages/origin").asText()).startsWith("reference.conf");
        JsonNode kv = json.get("kv");
        assertThat(kv.get("bytes_per_token").asLong()).isEqualTo(4L * 2 * 32 * 2 * 4);
        assertThat(kv.get("dtype").asText()).isEqualTo("f32");
        assertThat(kv.get("page_size").asInt()).isEqualTo(32);
        long bytesPerPage = 4L * 2 * 32 * 2 * 4 * 32;
        assertThat(kv.get("pool_pages").asLong()).isEqualTo((1 << 20) / bytesPerPage);
        assertThat(kv.get("pool_tokens").asLong()).isEqualTo(kv.get("pool_pages").asLong() * 32);
        assertThat(kv.get("pool_bytes").asLong()).isBetween(kv.get("pool_pages").asLong() * bytesPerPage, 1L << 20);
        assertThat(json.get("model").asText()).isEqualTo("tiny-gqa");
    }

    @Test
    void aServedNameRenamesTheModel()
            throws Exception
    {
        CliRun run = CliRun.of("config", "--json", "--model", "tiny-gqa", "--served-model-name", "my-model");

        assertThat(new ObjectMapper().readTree(run.stdout()).get("model").asText()).isEqualTo("my-model");
    }

    @Test
    void theReferenceDocumentsEveryKey()
    {
        CliRun run = CliRun.of("config", "--reference");

        assertThat(run.exitCode()).as(run.stderr()).isEqualTo(Main.OK);
        assertThat(run.stdout()).startsWith("# Configuration reference")
                .contains("## handoff.kv", "| `page-size` | `16` | integer, 1 to 256 | Token slots per page")
                .contains("| `heartbeat-interval` | `1s` | duration |");
    }
}
