package io.handoff.demo;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DemoReportTest
{
    private static final DemoReport.Setup SETUP = new DemoReport.Setup(false, false, 1, 1, 16, 3, "tiny-mla", "triton", "mooncake");
    private static final ServerFigures FIGURES = new ServerFigures(OptionalDouble.of(2e9), OptionalDouble.of(0.5), OptionalInt.of(0),
            OptionalInt.of(3), new BootstrapInfo(Optional.of("mooncake"), Optional.of("tcp"),
            new BootstrapInfo.EarlySend(Optional.of("auto"), Optional.of(true), Optional.of("mooncake declares STAGING")),
            Optional.of(new BootstrapInfo.KvShape("MLA", 1, 576, "BF16", 2304)), java.util.OptionalInt.of(2)), OptionalDouble.empty(),
            OptionalDouble.empty(), OptionalDouble.empty(), OptionalDouble.of(1_000_000), List.of(1.5e6, 0.5e6));

    private static RequestResult ok(int index, double ttft, int... ids)
    {
        return new RequestResult(index, ids, ttft, new double[] {ttft / 10, ttft / 5}, Optional.empty());
    }

    private static DemoReport report()
    {
        List<RequestResult> disaggregated = List.of(ok(0, 10, 1, 2, 3), ok(1, 20, 4, 5, 6), ok(2, 30, 7, 7, 7),
                RequestResult.failed(3, new int[] {1}, "HTTP 502: decode unreachable"));
        List<RequestResult> colocated = List.of(ok(0, 5, 1, 2, 3), ok(1, 6, 4, 5, 6), ok(2, 7, 7, 7, 8), ok(3, 8, 1, 2, 3));
        return DemoReport.of(SETUP, disaggregated, colocated, FIGURES, List.of("a note"), Optional.of("/tmp/logs"));
    }

    @Test
    void countsRequestsThatMatchTheColocatedEngineExactly()
    {
        DemoReport report = report();
        assertThat(report.requests()).isEqualTo(4);
        assertThat(report.completed()).isEqualTo(3);
        assertThat(report.failed()).isEqualTo(1);
        // request 2 differs in its last token, request 3 failed: neither matches
        assertThat(report.matched()).isEqualTo(2);
        assertThat(report.exactMatch()).isEqualTo(0.5);
        assertThat(report.distinctOutputTokens()).isEqualTo(7);
        assertThat(report.errors()).containsExactly("HTTP 502: decode unreachable");
    }

    @Test
    void latenciesAreOverCompletedRequestsOnly()
    {
        DemoReport report = report();
        assertThat(report.ttft().orElseThrow().p50()).isEqualTo(20);
        assertThat(report.colocatedTtft().orElseThrow().p50()).isEqualTo(6.5);
        // gaps of the completed requests: {1, 2}, {2, 4}, {3, 6}
        assertThat(report.itl().orElseThrow().p50()).isEqualTo(2.5);
    }

    @Test
    void jsonHasEveryFieldTheIssueNames()
    {
        JsonNode json = report().toJson();
        assertThat(json.fieldNames()).toIterable().contains("requests", "completed", "failed", "exact_match", "distinct_output_tokens",
                "transfer_backend", "transport", "attention", "model", "early_send", "ttft_ms", "itl_ms", "colocated_ttft_ms",
                "kv_bytes_transferred", "transfer_gbps", "pages_leaked", "log_dir", "prompt_tokens", "kv_bytes_per_prompt_token", "kv");
        assertThat(json.get("requests").asInt()).isEqualTo(4);
        assertThat(json.get("completed").asInt()).isEqualTo(3);
        assertThat(json.get("failed").asInt()).isEqualTo(1);
        assertThat(json.get("exact_match").asDouble()).isEqualTo(0.5);
        assertThat(json.get("distinct_output_tokens").asInt()).isEqualTo(7);
        assertThat(json.get("transfer_backend").asText()).isEqualTo("mooncake");
        assertThat(json.get("transport").asText()).isEqualTo("tcp");
        assertThat(json.get("attention").asText()).isEqualTo("triton");
        assertThat(json.get("model").asText()).isEqualTo("tiny-mla");
        assertThat(json.get("early_send").get("requested").asText()).isEqualTo("auto");
        assertThat(json.get("early_send").get("enabled").isBoolean()).isTrue();
        assertThat(json.get("early_send").get("reason").asText()).isEqualTo("mooncake declares STAGING");
        for (String latency : List.of("ttft_ms", "itl_ms", "colocated_ttft_ms", "colocated_itl_ms")) {
            assertThat(json.get(latency).get("p50").isNumber()).as(latency).isTrue();
            assertThat(json.get(latency).get("p99").isNumber()).as(latency).isTrue();
        }
        assertThat(json.get("kv_bytes_transferred").asLong()).isEqualTo(2_000_000_000L);
        assertThat(json.get("kv_bytes_per_decode_rank").toString()).isEqualTo("[1500000,500000]");
        assertThat(json.at("/layout/prefill/tp").asInt()).isEqualTo(2);
        assertThat(json.at("/layout/decode/tp").asInt()).isEqualTo(2);
        assertThat(json.get("transfer_gbps").asDouble()).isEqualTo(4.0);
        assertThat(json.get("prompt_tokens").asLong()).isEqualTo(1_000_000);
        assertThat(json.get("kv_bytes_per_prompt_token").asDouble()).isEqualTo(2000.0);
        assertThat(json.get("kv").get("layout").asText()).isEqualTo("MLA");
        assertThat(json.get("kv").get("heads").asInt()).isEqualTo(1);
        assertThat(json.get("kv").get("head_dim").asInt()).isEqualTo(576);
        assertThat(json.get("kv").get("dtype").asText()).isEqualTo("BF16");
        assertThat(json.get("kv").get("bytes_per_token").asLong()).isEqualTo(2304);
        assertThat(json.get("pages_leaked").get("prefill").asInt()).isEqualTo(0);
        assertThat(json.get("pages_leaked").get("decode").asInt()).isEqualTo(3);
        assertThat(json.get("errors")).hasSize(1);
        assertThat(json.get("notes").get(0).asText()).isEqualTo("a note");
        assertThat(json.get("log_dir").asText()).isEqualTo("/tmp/logs");
    }

    @Test
    void whatWasNotMeasuredIsNullInJson()
    {
        List<RequestResult> failed = List.of(RequestResult.failed(0, new int[0], "connection refused"));
        JsonNode json = DemoReport.of(SETUP, failed, failed, ServerFigures.UNKNOWN, List.of(), Optional.empty()).toJson();
        assertThat(json.get("completed").asInt()).isZero();
        assertThat(json.get("exact_match").asDouble()).isZero();
        for (String field : List.of("transport", "ttft_ms", "itl_ms", "colocated_ttft_ms", "kv_bytes_transferred", "transfer_gbps", "log_dir",
                "prompt_tokens", "kv_bytes_per_prompt_token", "kv", "kv_bytes_per_decode_rank")) {
            assertThat(json.get(field).isNull()).as(field).isTrue();
        }
        assertThat(json.get("early_send").get("enabled").isNull()).isTrue();
        assertThat(json.get("pages_leaked").get("prefill").isNull()).isTrue();
        assertThat(json.get("pages_leaked").get("decode").isNull()).isTrue();
    }

    @Test
    void tableStartsWithTheVerdict()
    {
        assertThat(report().toTable()).startsWith("handoff demo: MISMATCH: 2 of 4 requests did not produce the colocated engine's tokens (1 failed)")
                .contains("exact match", "0.500 (2 of 4", "pages leaked", "prefill 0, decode 3", "enabled (requested auto): mooncake declares STAGING",
                        "4.000 GB/s", "/tmp/logs", "KV per token", "2304 B in the pool (MLA, 1 head x 576, BF16); 2000.0 B sent per prompt token "
                                + "(1000000 prompt tokens)");
        List<RequestResult> same = List.of(ok(0, 1, 1, 2));
        assertThat(DemoReport.of(SETUP, same, same, FIGURES, List.of(), Optional.empty()).toTable())
                .startsWith("handoff demo: OK: all 1 requests produced exactly the colocated engine's tokens");
    }

    @Test
    void resultsForDifferentRequestsCannotBeCompared()
    {
        assertThatThrownBy(() -> DemoReport.of(SETUP, List.of(ok(0, 1, 1)), List.of(), FIGURES, List.of(), Optional.empty()))
                .hasMessageContaining("different requests");
    }
}
