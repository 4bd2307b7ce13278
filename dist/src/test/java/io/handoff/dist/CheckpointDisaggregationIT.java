package io.handoff.dist;

import io.handoff.core.model.RopeScaling;
import io.handoff.core.model.hf.HfModelConfig.HfArchitecture;
import io.handoff.testkit.model.SeededCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.http.HttpResponse;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Disaggregation on a Hugging Face checkpoint written by the test (Llama-shaped, GQA: 4 query heads over
 * 2 KV heads) rather than a built-in seeded model: {@code handoff demo --model-path} runs a prefill, a
 * decode and a router as processes of the distribution and checks every output against the colocated
 * engine's, with chunked prefill on, on every transfer backend and both a one-token and a 16-token page.
 */
class CheckpointDisaggregationIT
{
    @TempDir
    Path temp;

    // Every backend and transport once, the page sizes alternating so that each appears on a two-sided
    // (mooncake tcp, nixl tcp) and a one-sided (mooncake shm, mori, nixl posix) transfer; each architecture
    // (Qwen3's per-head q/k norms, Qwen2's q/k/v biases) on a one-token and a 16-token page.
    @ParameterizedTest(name = "{4} on {0} {2}, page size {3}")
    @CsvSource({
            "mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp, 1, LLAMA",
            "mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm, 16, QWEN3",
            "mori, -Dhandoff.plugins.mori.forward-sync=true, shm, 1, QWEN3",
            "nixl, -Dhandoff.plugins.nixl.tls=tcp, ucx:tcp, 16, LLAMA",
            "nixl, '-Dhandoff.plugins.nixl.tls=posix,self', 'ucx:posix,self', 1, QWEN2",
            "mooncake, -Dhandoff.plugins.mooncake.transport=tcp, tcp, 16, QWEN2"})
    void aDisaggregatedDemoOnACheckpointMatchesTheColocatedEngineBitForBit(String backend, String setting, String transport, int pageSize,
            HfArchitecture architecture)
            throws Exception
    {
        Ucx.assumeLoadableFor(backend);
        Path model = temp.resolve("tiny-llama-gqa");
        assertThat(SeededCheckpoint.write(model, 11L, false, architecture, RopeScaling.NONE).kvHeads())
                .isLessThan(SeededCheckpoint.config("x", 11L, false).heads());

        PdDemo.runBitExact(temp, model, backend, setting, transport, pageSize);
    }

    /**
     * A file as {@code handoff quantize} writes it from a checkpoint (Q4_K matrices, Q6_K for output and the layers that get
     * more bits; Q8_0 in the other case), served disaggregated with llama.cpp's quantized activations: the same bits as colocated.
     */
    @ParameterizedTest(name = "{0} on {1}, page size {4}")
    @CsvSource({
            "q4_k_m, mooncake, -Dhandoff.plugins.mooncake.transport=shm, shm, 16",
            "q8_0, mori, -Dhandoff.plugins.mori.forward-sync=true, shm, 1"})
    void aQuantizedFileDisaggregatesBitForBit(String type, String backend, String setting, String transport, int pageSize)
            throws Exception
    {
        Path model = temp.resolve("wide");
        SeededCheckpoint.writeWide(model, 13L);
        Path gguf = temp.resolve("wide-" + type + ".gguf");
        Launcher.Run quantize = Launcher.run(temp, "quantize", "--model-path", model.toString(), "--type", type, "--out", gguf.toString());
        assertThat(quantize.exitCode()).as(quantize.describe()).isZero();
        assertThat(quantize.stdout()).contains(type.equals("q4_k_m") ? "Q4_K x" : "Q8_0 x");

        PdDemo.runBitExact(temp, gguf, backend, setting, transport, pageSize);
    }

    /** Quantized activations change the logits: a prefill and a decode that disagree on them refuse to pair. */
    @Test
    void aPrefillAndADecodeThatRoundActivationsDifferentlyRefuseToPair()
            throws Exception
    {
        Path model = temp.resolve("wide");
        SeededCheckpoint.writeWide(model, 13L);
        Path gguf = temp.resolve("wide-q8_0.gguf");
        Launcher.Run quantize = Launcher.run(temp, "quantize", "--model-path", model.toString(), "--type", "q8_0", "--out", gguf.toString());
        assertThat(quantize.exitCode()).as(quantize.describe()).isZero();

        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "--model-path", gguf.toString(),
                "-Dhandoff.disaggregation.bootstrapping-timeout=3s");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "--model-path", gguf.toString(), "-Dhandoff.model.quantized-activations=off")) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();

            HttpResponse<String> response = DisaggregationIT.generateResponse(prefill, decode, control, "the thin theory in a tin", 4);

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            // the file's identity includes how its quantized matrices multiply, so the two weights hashes differ
            assertThat(response.body()).contains("handshake refused: incompatible peer").containsPattern("weights is 'wide@[0-9a-f]{16}' here but 'wide@[0-9a-f]{16}' on the peer");
            decode.assertNoPagesLeaked();
            prefill.assertNoPagesLeaked();
        }
    }

    @Test
    void aPrefillAndADecodeOnDifferentCheckpointsOfTheSameShapeRefuseToPairNamingBoth()
            throws Exception
    {
        Path first = temp.resolve("llama-a");
        Path second = temp.resolve("llama-b");
        SeededCheckpoint.write(first, 1L, false);
        SeededCheckpoint.write(second, 2L, false);

        // The refused decode never claims the prefill's room: it fails at the bootstrapping deadline, shortened here.
        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "--model-path", first.toString(),
                "-Dhandoff.disaggregation.bootstrapping-timeout=3s");
                ServerProcess decode = ServerProcess.serve(temp, "decode", "--model-path", second.toString())) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();

            HttpResponse<String> response = DisaggregationIT.generateResponse(prefill, decode, control, "the thin theory in a tin", 4);

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            // the prefill judges the decode's hello: "model is 'llama-a' here but 'llama-b' on the peer; weights is 'llama-a@<16 hex>' ..."
            assertThat(response.body()).contains("handshake refused: incompatible peer")
                    .containsPattern("model is 'llama-[ab]' here but 'llama-[ab]' on the peer")
                    .containsPattern("weights is 'llama-[ab]@[0-9a-f]{16}' here but 'llama-[ab]@[0-9a-f]{16}' on the peer")
                    .contains("'llama-a").contains("'llama-b");
            decode.assertNoPagesLeaked();
            prefill.assertNoPagesLeaked();
        }
    }

    /**
     * Two checkpoints that differ only in their weights' values (same directory name, shapes and config,
     * other seeds) must be refused too: otherwise the decode continues KV computed by other weights and
     * answers garbage without an error.
     */
    @Test
    void checkpointsThatDifferOnlyInTheirWeightValuesRefuseToPair()
            throws Exception
    {
        Path first = temp.resolve("a").resolve("llama");
        Path second = temp.resolve("b").resolve("llama");
        SeededCheckpoint.write(first, 1L, false);
        SeededCheckpoint.write(second, 2L, false);

        try (ServerProcess prefill = ServerProcess.serve(temp, "prefill", "--model-path", first.toString());
                ServerProcess decode = ServerProcess.serve(temp, "decode", "--model-path", second.toString())) {
            String control = ServerProcess.json(prefill.get("/bootstrap").body()).get("control").asText();

            HttpResponse<String> response = DisaggregationIT.generateResponse(prefill, decode, control, "the thin theory in a tin", 4);

            assertThat(response.statusCode()).as(response.body()).isGreaterThanOrEqualTo(400);
            assertThat(response.body()).contains("incompatible peer").contains("weights is 'llama@");
            decode.assertNoPagesLeaked();
        }
    }
}
