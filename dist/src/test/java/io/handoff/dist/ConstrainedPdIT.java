package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A constrained request through PD on every transfer backend: the prefill samples the first token under the grammar,
 * the decode reads that token into its own matcher and samples the rest under it, and the output is the colocated
 * server's to the byte, for a regular expression and a JSON Schema.
 */
class ConstrainedPdIT
{
    private static final String SCHEMA = "{\"type\": \"object\", \"properties\": {\"answer\": {\"enum\": [\"yes\", \"no\", \"maybe\"]}, "
            + "\"n\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 999}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", "
            + "\"maxLength\": 4}, \"maxItems\": 2}}, \"required\": [\"answer\", \"n\", \"tags\"], \"additionalProperties\": false}";
    private static final AtomicLong ROOMS = new AtomicLong(7_000);

    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "mooncake, handoff.plugins.mooncake.transport, tcp",
            "nixl, handoff.plugins.nixl.tls, tcp",
            "mori, handoff.plugins.mori.forward-sync, true"})
    void theConstraintCrossesTheHandoffAndTheOutputIsTheColocatedOne(String backend, String key, String value)
            throws Exception
    {
        String[] options = {"-Dhandoff.disaggregation.transfer-backend=" + backend, "-D" + key + "=" + value,
                "-Dhandoff.disaggregation.claim-timeout=60s"};
        List<ObjectNode> bodies = new ArrayList<>();
        for (int seed = 0; seed < 3; seed++) {
            bodies.add(body("Answer:", 32, 0.9, seed, "regex", "(yes|no), [0-9]{3}\\."));
            bodies.add(body("JSON:", 200, 0.8, seed, "json_schema", SCHEMA));
        }
        List<String> colocated = new ArrayList<>();
        try (ServerProcess server = ServerProcess.serve(temp, "colocated", options)) {
            for (ObjectNode body : bodies) {
                colocated.add(text(server.post("/generate", body.toString())));
            }
        }
        for (int i = 0; i < bodies.size(); i += 2) {
            assertThat(colocated.get(i)).matches("(yes|no), [0-9]{3}\\.");
            JsonNode json = ServerProcess.json(colocated.get(i + 1));
            assertThat(json.get("answer").asText()).isIn("yes", "no", "maybe");
            assertThat(json.get("n").asInt()).isBetween(0, 999);
        }
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", options);
                ServerProcess decode = ServerProcess.serve(temp, "decode", options)) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
            List<String> disaggregated = new ArrayList<>();
            for (ObjectNode body : bodies) {
                disaggregated.add(text(pd(prefill, decode, control, body)));
            }
            assertThat(disaggregated).isEqualTo(colocated);
            prefill.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
        }
    }

    private static ObjectNode body(String text, int maxNewTokens, double temperature, int seed, String constraint, String value)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        body.put("text", text);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", maxNewTokens);
        sampling.put("temperature", temperature);
        sampling.put("seed", seed);
        sampling.put(constraint, value);
        return body;
    }

    // As the router sends it: the same body to both, with the room, and the prefill's control address to the decode.
    private static HttpResponse<String> pd(ServerProcess prefill, ServerProcess decode, String control, ObjectNode body)
    {
        ObjectNode paired = body.deepCopy();
        paired.put("rid", "constrained-" + ROOMS.get());
        paired.put("bootstrap_room", ROOMS.incrementAndGet());
        paired.put("bootstrap_generation", 0);
        CompletableFuture<HttpResponse<String>> prefillSide = CompletableFuture.supplyAsync(() -> prefill.post("/generate", paired.toString()));
        ObjectNode decodeBody = paired.deepCopy();
        decodeBody.put("bootstrap_host", control);
        HttpResponse<String> response = decode.post("/generate", decodeBody.toString());
        assertThat(prefillSide.join().statusCode()).isEqualTo(200);
        return response;
    }

    private static String text(HttpResponse<String> response)
    {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode json = ServerProcess.json(response.body());
        assertThat(json.get("meta_info").get("finish_reason").get("type").asText()).as(response.body()).isEqualTo("stop");
        return json.get("text").asText();
    }
}
