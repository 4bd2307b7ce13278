package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The official OpenAI client (npm {@code openai}, pinned in {@code testkit-node}) against {@code handoff serve} of the
 * built distribution, serving a checkpoint with a chat template: completions and chat with and without streaming,
 * the model list and object, the Responses API, a json_schema answer and a required tool call ({@code testkit-node/openai-client.mjs} checks what it gets); then
 * through a router in front of one prefill and one decode, where every one of them gives what the colocated server
 * gave (disaggregated output is colocated output, through the official client too). The package comes from {@code HANDOFF_NODE_MODULES}
 * (CI sets it; then a missing package or node fails the test); without it the test is skipped, saying why.
 */
class OpenAiClientIT
{
    private static final String MODULES_ENV = "HANDOFF_NODE_MODULES";
    private static final String TEMPLATE = "{%- for m in messages %}{{- '<|' + m['role'] + '|>' + m['content'] + '\\n' }}{%- endfor %}"
            + "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";

    @TempDir
    Path temp;

    @Test
    void theOfficialClientWorksAgainstAColocatedServerAndThroughARouter()
            throws Exception
    {
        Path modules = nodeModules();
        Path model = temp.resolve("chat-llama");
        SeededCheckpoint.write(model, 11L, false);
        Files.writeString(model.resolve("tokenizer_config.json"), ServerProcess.JSON.createObjectNode()
                .put("bos_token", "<|begin_of_text|>").put("eos_token", "<|end_of_text|>").put("chat_template", TEMPLATE).toString());
        String[] serve = {"--model-path", model.toString()};
        JsonNode colocated;
        try (ServerProcess server = ServerProcess.start(temp, serve)) {
            colocated = client(modules, server, "chat-llama");
            assertThat(colocated.get("responseEvents").toString()).contains("response.output_text.done");
        }
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", serve);
                ServerProcess decode = ServerProcess.serve(temp, "decode", serve);
                ServerProcess router = ServerProcess.router(temp, prefill, decode)) {
            JsonNode routed = client(modules, router, "chat-llama");
            // disaggregated output is the colocated output, through the official client too
            assertThat(routed.get("completion")).isEqualTo(colocated.get("completion"));
            assertThat(routed.get("chat")).isEqualTo(colocated.get("chat"));
            assertThat(routed.get("response")).isEqualTo(colocated.get("response"));
            assertThat(routed.get("responseEvents")).isEqualTo(colocated.get("responseEvents"));
            // a constrained answer and a tool call, sampled: the prefill samples the first token under the grammar
            assertThat(routed.get("structured")).isEqualTo(colocated.get("structured"));
            assertThat(routed.get("toolCall")).isEqualTo(colocated.get("toolCall"));
            JsonNode info = ServerProcess.json(router.get("/get_model_info").body());
            assertThat(info.get("model_path").asText()).isEqualTo("chat-llama");
            // the router's server info is a decode's, and says so; a prefill's names its role and transfer backend
            var routedInfo = router.get("/get_server_info");
            assertThat(routedInfo.headers().firstValue("X-Handoff-Backend")).contains("http://127.0.0.1:" + decode.port);
            assertThat(ServerProcess.json(routedInfo.body()).get("disaggregation_mode").asText()).isEqualTo("decode");
            JsonNode prefillInfo = ServerProcess.json(prefill.get("/get_server_info").body());
            assertThat(prefillInfo.get("disaggregation_mode").asText()).isEqualTo("prefill");
            assertThat(prefillInfo.get("disaggregation_transfer_backend").asText()).isNotEmpty();
            // every request has released its pages (a prefill's wait for the decode's word included): the flush is not refused
            prefill.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
            assertThat(prefill.metric("handoff_prefix_cache_pages")).isPositive();
            var flushed = router.post("/flush_cache", "");
            assertThat(flushed.statusCode()).as(flushed.body()).isEqualTo(200);
            assertThat(ServerProcess.json(flushed.body()).get("backends")).hasSize(2);
            assertThat(prefill.metric("handoff_prefix_cache_pages")).isZero();
            assertThat(decode.metric("handoff_prefix_cache_pages")).isZero();
            assertThat(prefill.metric("handoff_kv_pages{state=\"free\"}")).isEqualTo(prefill.metric("handoff_kv_pool_pages"));
        }
    }

    /** Runs the client script against {@code server}'s {@code /v1}; returns the JSON it printed, or fails with its output. */
    private JsonNode client(Path modules, ServerProcess server, String model)
            throws IOException, InterruptedException
    {
        Process node;
        try {
            node = new ProcessBuilder("node", testkit().resolve("openai-client.mjs").toString(), modules.toString(),
                    "http://127.0.0.1:" + server.port + "/v1", model).redirectErrorStream(true).start();
        }
        catch (IOException e) {
            throw new AssertionError(MODULES_ENV + " is set but node cannot be started (" + e.getMessage() + "); install Node.js 20 or later", e);
        }
        node.getOutputStream().close();
        String output = new String(node.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(node.waitFor(5, TimeUnit.MINUTES)).as("the OpenAI client script finished").isTrue();
        assertThat(node.exitValue()).as("the OpenAI client script against " + server.uri("/v1") + ":\n" + output
                + "\nserver log:\n" + server.logText()).isZero();
        String[] lines = output.strip().split("\n");
        return ServerProcess.json(lines[lines.length - 1]);
    }

    /** The {@code node_modules} holding {@code openai}: {@code HANDOFF_NODE_MODULES}'s, where a missing package fails the test. */
    private static Path nodeModules()
    {
        String configured = System.getenv(MODULES_ENV);
        assumeTrue(configured != null && !configured.isBlank(), "no " + MODULES_ENV + ": run npm ci --omit=optional in testkit-node and point "
                + MODULES_ENV + " at its node_modules to run the official OpenAI client's test");
        Path modules = Path.of(configured);
        if (!Files.isRegularFile(modules.resolve("openai/package.json"))) {
            fail(MODULES_ENV + "=" + configured + " has no openai/package.json; run npm ci --omit=optional in testkit-node");
        }
        return modules;
    }

    /** The repository's {@code testkit-node/}, found upwards from the working directory (the dist module's folder under Maven). */
    private static Path testkit()
    {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("testkit-node/openai-client.mjs"))) {
                return dir.resolve("testkit-node");
            }
        }
        throw new IllegalStateException("no testkit-node/openai-client.mjs above " + Path.of("").toAbsolutePath());
    }
}
