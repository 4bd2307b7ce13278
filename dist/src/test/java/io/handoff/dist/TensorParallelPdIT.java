package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.hf.HfModelConfig.HfArchitecture;
import io.handoff.testkit.model.SeededCheckpoint;
import io.handoff.testkit.model.SeededDeepseekCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prefill and decode servers of two tensor-parallel ranks each, as processes of the distribution: every rank's KV moves
 * into the same rank of the decode, on every transfer backend, bit-identical to a colocated engine of one rank, each
 * decode rank receiving its half of the KV; and a rank of either side lost while a transfer is in flight (between equal
 * layouts and between different ones) fails the request with its cause and leaves the decode's pages held until the
 * prefill proves no write can land.
 */
class TensorParallelPdIT
{
    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0} {2}, page size {3}")
    @CsvSource({
            "mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm, 16",
            "mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp, 1",
            "mori, -Dhandoff.plugins.mori.forward-sync=true, shm, 1",
            "nixl, -Dhandoff.plugins.nixl.tls=tcp, ucx:tcp, 16"})
    void aTwoRankPrefillHandsOffToATwoRankDecodeRankByRankBitForBit(String backend, String setting, String transport, int pageSize)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        Path model = temp.resolve("tiny-llama-gqa");
        SeededCheckpoint.write(model, 11L, false, HfArchitecture.LLAMA, RopeScaling.NONE);

        JsonNode report = PdDemo.runBitExact(temp, model, backend, setting, transport, pageSize, "--prefill-tp", "2", "--decode-tp", "2");

        assertThat(report.at("/layout/prefill/tp").asInt()).isEqualTo(2);
        assertThat(report.at("/layout/decode/tp").asInt()).isEqualTo(2);
        JsonNode perRank = report.get("kv_bytes_per_decode_rank");
        assertThat(perRank).hasSize(2);
        // each rank holds half the KV heads: the same bytes, and together every byte the prefills sent
        assertThat(perRank.get(0).asLong()).isPositive().isEqualTo(perRank.get(1).asLong());
        assertThat(perRank.get(0).asLong() + perRank.get(1).asLong()).isEqualTo(report.get("kv_bytes_transferred").asLong());
    }

    /** DeepSeek's latent is replicated on every rank (attention is split by head): each decode rank receives it from its prefill rank. */
    @Test
    void aTwoRankDeepseekPrefillHandsOffToATwoRankDecodeBitForBit()
            throws Exception
    {
        Path model = temp.resolve("tiny-deepseek-v3");
        SeededDeepseekCheckpoint.write(model, SeededDeepseekCheckpoint.Options.v3(16L));

        JsonNode report = PdDemo.runBitExact(temp, model, "mooncake", "-Dhandoff.plugins.mooncake.transport=shm", "shm", 16,
                "--prefill-tp", "2", "--decode-tp", "2");

        JsonNode perRank = report.get("kv_bytes_per_decode_rank");
        assertThat(perRank).hasSize(2);
        assertThat(perRank.get(0).asLong()).isPositive().isEqualTo(perRank.get(1).asLong());
    }

    /**
     * The prefill's transfer of request A parks after its first page, so a write into the decode's pages is in flight; then
     * the decode or the prefill loses rank 1. That server fails A with {@code rank_lost} and answers /health with 503 naming
     * the rank; the decode's request ends with an error, none hangs; A's pages on the decode stay quarantined (no timer
     * releases them: the parked write could still land) until the prefill's exit proves it cannot, and then none is left.
     */
    @ParameterizedTest(name = "{0} loses rank 1, prefill TP{1} to decode TP{2}")
    @CsvSource({"decode, 2, 2", "prefill, 2, 2", "decode, 1, 2", "prefill, 2, 1"})
    void aRankLostMidTransferFailsTheRequestAndTheDecodesPagesWaitForTheProof(String side, int prefillRanks, int decodeRanks)
            throws Exception
    {
        String prompt = "A request whose decode loses a rank while the prefill is still writing its KV. ".repeat(3);
        String[] common = {"--model", "tiny-gqa", "-Dhandoff.disaggregation.transfer-backend=mooncake",
                "-Dhandoff.plugins.mooncake.transport=shm", "-Dhandoff.scheduler.chunked-prefill-size=64",
                "-Dhandoff.parallel.heartbeat-timeout=5s", "-Dhandoff.disaggregation.drain-deadline=6s", "-Dhandoff.kv.pool-pages=64"};
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", with(with(common, "-Dhandoff.parallel.tensor-size=" + prefillRanks),
                "-Dhandoff.debug.faults=[\"transfer-after-page b=0 park\"]"));
                ServerProcess decode = ServerProcess.serve(temp, "decode", with(common, "-Dhandoff.parallel.tensor-size=" + decodeRanks))) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();
            ServerProcess losing = side.equals("decode") ? decode : prefill;
            long rank1 = ServerProcess.json(losing.get("/health").body()).get("ranks").get(1).get("pid").asLong();

            CompletableFuture<HttpResponse<String>> a = CompletableFuture.supplyAsync(() -> decode.post("/generate", body("a", prompt, control, 8)));
            CompletableFuture.runAsync(() -> prefill.post("/generate", body("a", prompt, null, 1)));
            decode.awaitMetric("handoff_kv_pages{state=\"receiving\"}", v -> v > 0);
            // the prefill sampled A's first token: its chunks are posted and its transfer thread is parked on the first page
            prefill.awaitMetric("handoff_generation_tokens_total", v -> v >= 1);

            ProcessHandle.of(rank1).orElseThrow().destroyForcibly();
            losing.awaitUnhealthy();
            assertThat(ServerProcess.json(losing.get("/health").body()).get("ranks").get(1).get("healthy").asBoolean()).isFalse();
            if (side.equals("decode")) {
                // A waited for its KV, in no step: the loss fails it at once
                HttpResponse<String> failed = a.get();
                assertThat(failed.statusCode()).as(failed.body()).isNotEqualTo(200);
                assertThat(failed.body()).contains("rank 1 lost");
                assertThat(decode.metric("handoff_request_failures_total{cause=\"rank_lost\"}")).isEqualTo(1);
                decode.awaitMetric("handoff_suspect_peers", v -> v == 1);
                assertThat(decode.metric("handoff_kv_pages{state=\"quarantined\"}")).as("no deadline releases a page a write may still land in")
                        .isPositive();
            }
            else {
                // A's KV is all computed and in the prefill's pool file: its transfer may go on; the server takes nothing new
                HttpResponse<String> refused = prefill.post("/generate", body("b", "Another request.", null, 1));
                assertThat(refused.body()).contains("rank 1 lost");
                assertThat(prefill.metric("handoff_request_failures_total{cause=\"rank_lost\"}")).isEqualTo(1);
                assertThat(decode.metric("handoff_kv_pages{state=\"receiving\"}")).isPositive();
            }

            prefill.process.destroyForcibly().waitFor();
            assertThat(a.get().statusCode()).as("the request ended, with an error").isNotEqualTo(200);
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", v -> v == 0);
            decode.awaitNothingInFlight();
            decode.assertNoPagesLeaked();
        }
    }

    private static String body(String rid, String prompt, String control, int newTokens)
    {
        var body = ServerProcess.JSON.createObjectNode();
        body.put("text", prompt);
        var sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", newTokens);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        body.put("rid", rid);
        // one room per request: a room id is the router's to give, once
        body.put("bootstrap_room", rid.equals("a") ? 1 : 2);
        body.put("bootstrap_generation", 0);
        if (control != null) {
            body.put("bootstrap_host", control);
        }
        return body.toString();
    }


    private static String[] with(String[] options, String more)
    {
        String[] all = java.util.Arrays.copyOf(options, options.length + 1);
        all[options.length] = more;
        return all;
    }
}
