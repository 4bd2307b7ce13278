package io.handoff.bench.attention;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.bench.report.Chart;
import io.handoff.bench.report.Report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static java.util.Objects.requireNonNull;

/** The attention bench's result as people read it: a text table, or a report with its chart and table. */
final class AttentionFigures
{
    private static final List<String> HEADER = List.of("seq_len", "batch", "KV MB/step", "attention GB/s", "read GB/s", "ratio", "extend tok/s");

    private final ObjectNode result;

    AttentionFigures(ObjectNode result)
    {
        this.result = requireNonNull(result, "result is null");
    }

    void printTable(PrintWriter out)
    {
        out.printf(Locale.ROOT, "attention plugin %s (%s arithmetic), model %s, KV %s, page %d, %d layers, %d threads, median of %d rounds%n",
                result.get("plugin").asText(), result.get("arithmetic").asText(), result.get("model").asText(), result.get("kv_dtype").asText(),
                result.get("page_size").asInt(),
                result.get("layers").asInt(), result.get("threads").asInt(), result.get("rounds").asInt());
        out.printf(Locale.ROOT, "%8s %6s %11s %15s %10s %7s %13s%n", HEADER.toArray());
        for (List<String> row : rows()) {
            out.printf(Locale.ROOT, "%8s %6s %11s %15s %10s %7s %13s%n", row.toArray());
        }
        out.println(note());
    }

    Report report()
    {
        List<Double> seqLens = new ArrayList<>();
        List<Double> gbps = new ArrayList<>();
        List<Double> extend = new ArrayList<>();
        for (JsonNode row : result.get("results")) {
            seqLens.add(row.get("seq_len").asDouble());
            gbps.add(row.get("attention_gbps").asDouble());
            extend.add(row.get("extend_tokens_per_s").asDouble());
        }
        String plugin = result.get("plugin").asText();
        double reference = result.get("read_bandwidth").get("gbps").asDouble();
        return new Report("handoff bench attention: " + plugin + " on " + result.get("model").asText())
                .result(result)
                .note(note())
                .chart(Chart.line("attention GB/s vs sequence length", "sequence length (tokens)", "GB/s").logX()
                        .series(plugin + " decode", seqLens, gbps)
                        .reference("read bandwidth (streaming kernel, same run)", reference))
                .chart(Chart.line("extend attention tokens/s vs sequence length", "sequence length (tokens)", "tokens/s").logX()
                        .series(plugin + " extend", seqLens, extend))
                .table("decode and extend attention", HEADER, rows());
    }

    private List<List<String>> rows()
    {
        List<List<String>> rows = new ArrayList<>();
        for (JsonNode row : result.get("results")) {
            rows.add(List.of(row.get("seq_len").asText(), row.get("batch").asText(),
                    String.format(Locale.ROOT, "%.1f", row.get("kv_bytes").asDouble() / 1e6),
                    String.format(Locale.ROOT, "%.2f", row.get("attention_gbps").asDouble()),
                    String.format(Locale.ROOT, "%.2f", row.get("read_bandwidth_gbps").asDouble()),
                    String.format(Locale.ROOT, "%.3f", row.get("ratio_read_bandwidth").asDouble()),
                    String.format(Locale.ROOT, "%.1f", row.get("extend_tokens_per_s").asDouble())));
        }
        return rows;
    }

    private String note()
    {
        return "attention GB/s: the K and V bytes a decode step must read (every sequence, every layer) per second. read GB/s: "
                + result.get("read_bandwidth").get("kernel").asText() + " over " + (result.get("read_bandwidth").get("buffer_bytes").asLong() >> 20)
                + " MiB, measured in the same rounds on the same " + result.get("threads").asInt() + " threads. extend: a chunk of "
                + "extend_tokens query tokens at the end of sequence 0, per second. Decode of each length's last position equals extend of it to the bit.";
    }
}
