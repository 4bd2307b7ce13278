package io.handoff.dist;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * PD that adapts, on real processes: a conversation's turns through a router give the colocated output while the decode
 * takes its history from its own prefix cache (only what a turn adds moves), and with the prefill gone the router lets
 * the decode compute prompts itself, with the same output.
 */
class AdaptivePdIT
{
    @TempDir
    Path temp;

    @Test
    void eachTurnMovesOnlyWhatItAddsAndWithoutAPrefillTheDecodeComputesThePromptItself()
            throws Exception
    {
        try (ServerProcess colocated = ServerProcess.serve(temp, "colocated");
                ServerProcess prefill = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = ServerProcess.router(temp, prefill, decode)) {
            SplittableRandom random = new SplittableRandom(31);
            List<Integer> history = ids(random, 160);
            long promptTokens = 0;
            for (int turn = 0; turn < 3; turn++) {
                List<Integer> answer = generate(router, history);
                assertThat(answer).as("turn " + turn + " through PD").isEqualTo(generate(colocated, history));
                promptTokens += history.size();
                history.addAll(answer);
                history.addAll(ids(random, 24));
            }
            double hits = decode.metric("handoff_decode_prefix_hit_tokens_total");
            // turns 2 and 3 resend 160 + 32 and 160 + 64 tokens of history, of which the decode holds the whole pages
            assertThat(hits).isGreaterThanOrEqualTo(320);
            double received = decode.metric("handoff_kv_received_bytes_total");
            double perToken = received / (promptTokens - hits);
            assertThat(perToken).as("bytes received per token not held").isPositive();
            // every prompt page received would be well over what moved: the history moved once
            assertThat(received).isLessThan(perToken * promptTokens * 0.75);

            prefill.close();
            List<Integer> question = ids(random, 40);
            List<Integer> expected = generate(colocated, question);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            HttpResponse<String> answer;
            while (true) {
                answer = router.post("/generate", body(question));
                if (answer.statusCode() == 200 || System.nanoTime() > deadline) {
                    break;
                }
                Thread.sleep(200); // until the router's poll finds the prefill gone, bounded: not provoking a race
            }
            assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(ServerProcess.json(answer.body()))).isEqualTo(expected);
            assertThat(router.metric("handoff_router_decode_local_total")).isPositive();
            decode.assertNoPagesLeaked();
        }
    }

    private static List<Integer> generate(ServerProcess server, List<Integer> prompt)
    {
        HttpResponse<String> response = server.post("/generate", body(prompt));
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return ServerProcess.outputIds(ServerProcess.json(response.body()));
    }

    private static String body(List<Integer> prompt)
    {
        ObjectNode body = ServerProcess.JSON.createObjectNode();
        ArrayNode ids = body.putArray("input_ids");
        prompt.forEach(ids::add);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", 8);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body.toString();
    }

    private static List<Integer> ids(SplittableRandom random, int count)
    {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            ids.add(random.nextInt(1, 250));
        }
        return ids;
    }
}
