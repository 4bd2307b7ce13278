package io.handoff.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code handoff generate --stop}: the engine's stop-string rules, as the HTTP APIs apply them, for the CLI. */
class GenerateCommandTest
{
    private static final String PROMPT = "Stop strings belong to the engine";

    @Test
    void aStopStringEndsTheTextBeforeItWithFinishReasonStop()
            throws Exception
    {
        JsonNode full = generate();
        String text = full.get("text").asText();
        assertThat(text.length()).as("the seeded model's text").isGreaterThan(16);
        String stop = text.substring(10, 13);

        JsonNode stopped = generate("--stop", stop);

        assertThat(stopped.get("finish_reason").asText()).isEqualTo("stop");
        assertThat(stopped.get("text").asText()).isEqualTo(text.substring(0, text.indexOf(stop)));
        assertThat(stopped.get("matched_stop").asText()).isEqualTo(stop);
        // The output ends at the token that completed the stop string: a prefix of the unstopped output.
        int[] fullIds = ids(full);
        int[] stoppedIds = ids(stopped);
        assertThat(stoppedIds.length).isLessThan(fullIds.length);
        assertThat(java.util.Arrays.copyOf(fullIds, stoppedIds.length)).isEqualTo(stoppedIds);
        assertThat(stopped.get("completion_tokens").asInt()).isEqualTo(stoppedIds.length);
    }

    @Test
    void aStopStringThatNeverAppearsChangesNothing()
            throws Exception
    {
        JsonNode full = generate();
        JsonNode unmatched = generate("--stop", "this string is not in the output");

        assertThat(unmatched.get("text").asText()).isEqualTo(full.get("text").asText());
        assertThat(unmatched.get("finish_reason").asText()).isEqualTo(full.get("finish_reason").asText());
        assertThat(unmatched.has("matched_stop")).isFalse();
    }

    private static JsonNode generate(String... extra)
            throws Exception
    {
        List<String> args = new ArrayList<>(List.of("generate", "--model", "tiny-gqa", "--prompt", PROMPT, "--max-new-tokens", "40", "--json"));
        args.addAll(List.of(extra));
        CliRun run = CliRun.of(args.toArray(String[]::new));
        assertThat(run.exitCode()).as(run.stderr()).isEqualTo(Main.OK);
        JsonNode results = new ObjectMapper().readTree(run.stdout());
        assertThat(results.size()).isEqualTo(1);
        return results.get(0);
    }

    private static int[] ids(JsonNode result)
    {
        JsonNode ids = result.get("output_ids");
        int[] out = new int[ids.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ids.get(i).asInt();
        }
        return out;
    }
}
