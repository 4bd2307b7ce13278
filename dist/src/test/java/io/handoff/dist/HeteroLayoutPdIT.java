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
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prefill and decode servers of different tensor-parallel sizes, as processes of the distribution, on every backend:
 * each decode rank receives exactly the KV heads it holds (half each of two ranks' worth of a 2-KV-head model, a
 * replicated head on each of its holders, the whole MLA latent on every rank), bit-identical to a colocated engine of
 * one rank, with early send of the cached prefix and nothing left behind; and a bit torn in a slice of the last decode
 * rank is caught by the page checksum, never decoded from.
 */
class HeteroLayoutPdIT
{
    @TempDir
    Path temp;

    // Both directions, on every backend and transport, one-token and 16-token pages; 2 KV heads, so 4 decode ranks hold
    // each head twice (replicated) and 4 prefill ranks hold each twice (each decode rank reads one holder).
    @ParameterizedTest(name = "P{4} -> D{5} on {0} {2}, page size {3}")
    @CsvSource({
            "mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm, 16, 2, 1",
            "mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp, 1, 1, 2",
            "mori, -Dhandoff.plugins.mori.forward-sync=true, shm, 1, 2, 4",
            "nixl, -Dhandoff.plugins.nixl.tls=tcp, ucx:tcp, 16, 4, 2"})
    void aPrefillOfOneLayoutHandsOffToADecodeOfAnotherHeadSliceByHeadSliceBitForBit(String backend, String setting, String transport,
            int pageSize, int prefillRanks, int decodeRanks)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        Path model = temp.resolve("tiny-llama-gqa");
        SeededCheckpoint.write(model, 11L, false, HfArchitecture.LLAMA, RopeScaling.NONE);

        JsonNode report = PdDemo.runBitExact(temp, model, backend, setting, transport, pageSize, "--prefill-tp", Integer.toString(prefillRanks),
                "--decode-tp", Integer.toString(decodeRanks));

        assertThat(report.at("/layout/prefill/tp").asInt()).isEqualTo(prefillRanks);
        assertThat(report.at("/layout/decode/tp").asInt()).isEqualTo(decodeRanks);
        JsonNode perRank = report.get("kv_bytes_per_decode_rank");
        assertThat(perRank).hasSize(decodeRanks);
        long first = perRank.get(0).asLong();
        long sum = 0;
        for (JsonNode rank : perRank) {
            assertThat(rank.asLong()).as("every decode rank holds as many KV heads").isPositive().isEqualTo(first);
            sum += rank.asLong();
        }
        // what the prefills sent is what the decode ranks keep: a head held by two decode ranks went to each
        assertThat(sum).isEqualTo(report.get("kv_bytes_transferred").asLong());
    }

    /** MLA: every rank holds the whole latent, so each decode rank receives it from one prefill rank. */
    @Test
    void aDeepseekPrefillOfOneRankHandsOffToADecodeOfTwoBitForBit()
            throws Exception
    {
        Path model = temp.resolve("tiny-deepseek-v3");
        SeededDeepseekCheckpoint.write(model, SeededDeepseekCheckpoint.Options.v3(16L));

        JsonNode report = PdDemo.runBitExact(temp, model, "mori", "-Dhandoff.plugins.mori.forward-sync=true", "shm", 16,
                "--prefill-tp", "1", "--decode-tp", "2");

        JsonNode perRank = report.get("kv_bytes_per_decode_rank");
        assertThat(perRank).hasSize(2);
        assertThat(perRank.get(0).asLong()).isPositive().isEqualTo(perRank.get(1).asLong());
        assertThat(perRank.get(0).asLong() + perRank.get(1).asLong()).isEqualTo(report.get("kv_bytes_transferred").asLong());
    }

    /**
     * A decode with data-parallel attention: each of its two ranks holds its own requests' latents, and the prefill's
     * transfer writes each request's KV into its own rank's part of the pages, only there.
     */
    @Test
    void aDeepseekPrefillOfTwoRanksHandsOffToADataParallelDecodeEachRankReceivingItsOwnRequests()
            throws Exception
    {
        Path model = temp.resolve("tiny-deepseek-v3");
        SeededDeepseekCheckpoint.write(model, SeededDeepseekCheckpoint.Options.v3(16L));

        JsonNode report = PdDemo.runBitExact(temp, model, 6, "mooncake", "-Dhandoff.plugins.mooncake.transport=shm", "shm", 16,
                "--prefill-tp", "2", "--decode-dp", "2");

        assertThat(report.at("/layout/decode/dp").asInt()).isEqualTo(2);
        JsonNode perRank = report.get("kv_bytes_per_decode_rank");
        assertThat(perRank).hasSize(2);
        // the requests went to both ranks, each request's latent to one of them only
        assertThat(perRank.get(0).asLong()).isPositive();
        assertThat(perRank.get(1).asLong()).isPositive();
        assertThat(perRank.get(0).asLong() + perRank.get(1).asLong()).isEqualTo(report.get("kv_bytes_transferred").asLong());
    }

    /**
     * One bit of the last decode rank's slice of the first verified page is flipped as it lands (the fault point before
     * the check): the page checksum, read across the ranks in the canonical order, catches it; the router retries the
     * request in a new room and the answer is the colocated engine's.
     */
    @Test
    void aTornSliceOfTheLastDecodeRankIsCaughtByTheChecksumAndRetried()
            throws Exception
    {
        String prompt = "A prompt whose KV lands torn in the last decode rank's slice, once. ".repeat(2);
        List<Integer> reference = Launcher.colocated(temp, List.of(prompt), 8).getFirst();
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", SHM);
                ServerProcess decode = ServerProcess.serve(temp, "decode", SHM, "--tensor-parallel", "2",
                        "-Dhandoff.debug.faults=[\"decode-before-verify corrupt=1\"]");
                ServerProcess router = ServerProcess.launch(temp, "router", List.of("router", "--port", "0", "--prefill",
                        "http://127.0.0.1:" + prefill.port, "--decode", "http://127.0.0.1:" + decode.port, "-Dhandoff.router.health-interval=200ms"))) {
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(60).toNanos();
            while (!healthy(router)) {
                assertThat(System.nanoTime()).as("the router's servers did not become healthy: " + router.get("/backends").body()).isLessThan(deadline);
                Thread.sleep(50); // waiting for other processes to come up: poll, bounded above
            }
            var body = ServerProcess.JSON.createObjectNode();
            body.put("text", prompt);
            var sampling = body.putObject("sampling_params");
            sampling.put("max_new_tokens", 8);
            sampling.put("temperature", 0);
            sampling.put("ignore_eos", true);
            HttpResponse<String> response = router.post("/generate", body.toString());

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(ServerProcess.outputIds(ServerProcess.json(response.body()))).isEqualTo(reference);
            assertThat(decode.logText()).contains("KV checksum mismatch on room page 0");
            assertThat(router.metric("handoff_router_retries_total{cause=\"checksum_mismatch\"}")).isEqualTo(1);
            decode.awaitMetric("handoff_kv_pages{state=\"quarantined\"}", value -> value == 0);
            decode.assertNoPagesLeaked();
        }
    }

    private static boolean healthy(ServerProcess router)
    {
        JsonNode health = ServerProcess.json(router.get("/health").body());
        return health.path("prefill").path("healthy").asInt() == 1 && health.path("decode").path("healthy").asInt() == 1;
    }

    private static final String SHM = "-Dhandoff.plugins.mooncake.transport=shm";
}
