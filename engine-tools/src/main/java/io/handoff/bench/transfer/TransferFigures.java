package io.handoff.bench.transfer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Arrays;

/**
 * What one page size measured: the backend's GB/s per round, the memcpy reference's per round (interleaved with the
 * backend's), ucx_perftest's figure or why there is none, and the plans a round took. Only built once the
 * receiver's pool was verified.
 */
record TransferFigures(String backend, String transport, PayloadShape shape, boolean scatter, double[] gbps, double[] memcpyGbps,
        UcxPerftest.Result ucxPerftest, long ucxMessageBytes, int plans, long planBytes)
{
    double median()
    {
        return median(gbps);
    }

    double memcpyMedian()
    {
        return median(memcpyGbps);
    }

    double ratioMemcpy()
    {
        return median() / memcpyMedian();
    }

    Double ratioUcxPerftest()
    {
        return ucxPerftest.gbps() == null ? null : median() / ucxPerftest.gbps();
    }

    void write(ObjectNode json)
    {
        json.put("backend", backend);
        json.put("transport", transport);
        json.put("bytes", shape.bytes());
        json.put("page_bytes", shape.pageBytes());
        json.put("layers", shape.layers());
        json.put("scatter", scatter);
        if (shape.sliced()) {
            // the head-sliced pattern: each of the receiver's ranks gets its KV heads of every token slot
            ObjectNode sliced = json.putObject("head_sliced");
            sliced.put("sender_ranks", shape.senderRanks());
            sliced.put("receiver_ranks", shape.receiverRanks());
            sliced.put("kv_heads", PayloadShape.KV_HEADS);
            sliced.put("page_tokens", PayloadShape.PAGE_TOKENS);
        }
        json.put("rounds", gbps.length);
        ObjectNode figures = json.putObject("gbps");
        figures.put("median", round(median()));
        figures.put("min", round(Arrays.stream(gbps).min().orElseThrow()));
        figures.put("max", round(Arrays.stream(gbps).max().orElseThrow()));
        json.put("memcpy_gbps", round(memcpyMedian()));
        // round by round, in the order they ran (memcpy round i just before backend round i)
        ArrayNode rounds = json.putArray("round_gbps");
        Arrays.stream(gbps).forEach(value -> rounds.add(round(value)));
        ArrayNode memcpyRounds = json.putArray("round_memcpy_gbps");
        Arrays.stream(memcpyGbps).forEach(value -> memcpyRounds.add(round(value)));
        json.put("ratio_memcpy", round(ratioMemcpy()));
        if (ucxPerftest.gbps() == null) {
            json.putNull("ucx_perftest_gbps");
            json.putNull("ratio_ucx_perftest");
            json.put("ucx_perftest_reason", ucxPerftest.reason());
        }
        else {
            json.put("ucx_perftest_gbps", round(ucxPerftest.gbps()));
            json.put("ratio_ucx_perftest", round(ratioUcxPerftest()));
            json.put("ucx_perftest_message_bytes", ucxMessageBytes);
        }
        json.put("plans", plans);
        json.put("plan_bytes", planBytes);
        json.put("verified", true);
    }

    static double median(double[] values)
    {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }

    private static double round(double value)
    {
        return Math.round(value * 1000) / 1000.0;
    }
}
