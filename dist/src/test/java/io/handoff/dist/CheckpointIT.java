package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code handoff generate --model-path} on a Hugging Face checkpoint directory written by the test. */
class CheckpointIT
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROMPT = "the thin theory in a tin — é 🚀";
    private static final int NEW_TOKENS = 16;

    @TempDir
    Path temp;

    @ParameterizedTest(name = "tied embeddings {0}")
    @ValueSource(booleans = {false, true})
    void generateOnACheckpointGivesTheTokenizersPromptAndTheOutputOfAnInProcessEngine(boolean tied)
            throws Exception
    {
        Path model = temp.resolve("tiny-llama-" + tied);
        SeededCheckpoint.write(model, 42L, tied);

        Launcher.Run run = Launcher.run(temp, "generate", "--model-path", model.toString(), "--prompt", PROMPT,
                "--max-new-tokens", Integer.toString(NEW_TOKENS), "--attention", "triton", "--ignore-eos", "--json");
        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode result = JSON.readTree(run.stdout()).get(0);

        try (Engine engine = Engine.start(new ConfigSource(Optional.empty(),
                Map.of("handoff.model.path", model.toString(), "handoff.attention.backend", "triton"), Map.of()));
                ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            int[] prompt = compute.tokenizer().encodePrompt(PROMPT);
            assertThat(prompt[0]).as("<|begin_of_text|> first").isEqualTo(SeededCheckpoint.BOS);
            GenerateResult expected = compute.scheduler().submit(new GenerateRequest("reference", prompt, NEW_TOKENS, SamplingParams.GREEDY,
                    Set.of(), true, false), TokenListener.NONE).result().join();

            assertThat(result.get("prompt_tokens").asInt()).isEqualTo(prompt.length);
            assertThat(outputIds(result)).as("greedy output of bin/handoff").containsExactlyElementsOf(java.util.Arrays.stream(expected.outputIds()).boxed().toList());
            assertThat(result.get("text").asText()).isEqualTo(compute.tokenizer().decode(expected.outputIds()));
            assertThat(result.get("model").asText()).isEqualTo("tiny-llama-" + tied);
        }
        assertThat(outputIds(result)).hasSize(NEW_TOKENS);
    }

    @Test
    void serveOnACheckpointEncodesAndDecodesWithItsTokenizerAsGenerateDoes()
            throws Exception
    {
        Path model = temp.resolve("served");
        SeededCheckpoint.write(model, 5L, false);
        Launcher.Run generate = Launcher.run(temp, "generate", "--model-path", model.toString(), "--prompt", PROMPT,
                "--max-new-tokens", "12", "--ignore-eos", "--json");
        assertThat(generate.exitCode()).as(generate.describe()).isZero();
        JsonNode expected = JSON.readTree(generate.stdout()).get(0);

        try (ServerProcess server = ServerProcess.start(temp, "--model-path", model.toString())) {
            String text = JSON.writeValueAsString(PROMPT);
            JsonNode generated = ServerProcess.json(server.post("/generate",
                    "{\"text\": " + text + ", \"sampling_params\": {\"max_new_tokens\": 12, \"temperature\": 0, \"ignore_eos\": true}}").body());
            JsonNode completed = ServerProcess.json(server.post("/v1/completions",
                    "{\"model\": \"served\", \"prompt\": " + text + ", \"max_tokens\": 12, \"temperature\": 0, \"ignore_eos\": true}").body());

            assertThat(generated.get("output_ids")).isEqualTo(expected.get("output_ids"));
            assertThat(generated.get("text").asText()).isEqualTo(expected.get("text").asText());
            assertThat(generated.get("meta_info").get("prompt_tokens").asInt()).isEqualTo(expected.get("prompt_tokens").asInt());
            assertThat(completed.get("choices").get(0).get("text").asText()).as(completed.toString()).isEqualTo(expected.get("text").asText());
        }
    }

    @Test
    void aDisaggregatedDemoOnACheckpointMatchesTheColocatedEngine()
            throws Exception
    {
        Path model = temp.resolve("demo-model");
        SeededCheckpoint.write(model, 9L, false);
        Launcher.Run run = Launcher.run(temp, "demo", "--json", "--requests", "4", "--concurrency", "2", "--max-new-tokens", "8",
                "--model-path", model.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode report = JSON.readTree(run.stdout());
        assertThat(report.get("completed").asInt()).as(run.describe()).isEqualTo(4);
        assertThat(report.get("exact_match").asDouble()).as(run.describe()).isEqualTo(1.0);
        assertThat(report.get("model").asText()).isEqualTo("demo-model");
        assertThat(report.get("kv_bytes_transferred").asLong()).isPositive();
    }

    @Test
    void aBrokenGgufFileIsRefusedNamingThePath()
            throws Exception
    {
        Path gguf = Files.writeString(temp.resolve("model.gguf"), "GGUF");
        Launcher.Run run = Launcher.run(temp, "generate", "--model-path", gguf.toString(), "--prompt", "hi");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stderr()).contains(gguf.toString()).contains("the file is truncated or not GGUF");
    }

    private static List<Integer> outputIds(JsonNode result)
    {
        List<Integer> ids = new ArrayList<>();
        result.get("output_ids").forEach(id -> ids.add(id.asInt()));
        return ids;
    }
}
