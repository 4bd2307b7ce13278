package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code handoff generate} from the distribution: every model with every attention plugin that declares its layout. */
class ComputeIT
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROMPT = "Question: Natalia sold clips to 48 of her friends in April. How many clips did she sell?";

    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({"tiny-mla, triton", "tiny-mla, aiter", "tiny-gqa, triton"})
    void generateIsDeterministicAndNotDegenerate(String model, String attention)
            throws Exception
    {
        List<Integer> first = outputIds(Launcher.run(temp, "generate", "--prompt", PROMPT, "--max-new-tokens", "24",
                "--model", model, "--attention", attention, "--json"));
        List<Integer> second = outputIds(Launcher.run(temp, "generate", "--prompt", PROMPT, "--max-new-tokens", "24",
                "--model", model, "--attention", attention, "--json", "-Dhandoff.scheduler.overlap=false",
                "-Dhandoff.scheduler.chunked-prefill-size=16"));

        assertThat(first).hasSize(24);
        assertThat(new HashSet<>(first)).as("distinct tokens in %s", first).hasSizeGreaterThanOrEqualTo(4);
        assertThat(second).as("same output with overlap off and 16-token chunks").isEqualTo(first);
    }

    @Test
    void anAttentionPluginThatLacksTheModelsLayoutIsRefusedByName()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, "generate", "--prompt", "hi", "--model", "tiny-gqa", "--attention", "aiter");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stderr()).contains("attention backend 'aiter' does not support the GQA layout");
    }

    private static List<Integer> outputIds(Launcher.Run run)
            throws Exception
    {
        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode results = JSON.readTree(run.stdout());
        List<Integer> ids = new ArrayList<>();
        results.get(0).get("output_ids").forEach(id -> ids.add(id.asInt()));
        return ids;
    }
}
