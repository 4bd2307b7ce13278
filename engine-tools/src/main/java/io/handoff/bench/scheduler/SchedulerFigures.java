package io.handoff.bench.scheduler;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.bench.report.Chart;
import io.handoff.bench.report.Report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static java.util.Objects.requireNonNull;

/** The scheduler bench's result as people read it: a text table, or a report with its chart and table. */
final class SchedulerFigures
{
    private static final List<String> HEADER = List.of("batch", "scheduler us/step", "model us/step", "overhead", "tokens/step (no math, model)");

    private final ObjectNode result;

    SchedulerFigures(ObjectNode result)
    {
        this.result = requireNonNull(result, "result is null");
    }

    void printTable(PrintWriter out)
    {
        out.printf(Locale.ROOT, "model %s, attention %s, %d threads, overlap %s, median of %d rounds%n", result.get("model").asText(),
                result.get("attention").asText(), result.get("threads").asInt(), result.get("overlap").asBoolean(), result.get("rounds").asInt());
        out.printf(Locale.ROOT, "%6s %18s %14s %9s %29s%n", HEADER.toArray());
        for (List<String> row : rows()) {
            out.printf(Locale.ROOT, "%6s %18s %14s %9s %29s%n", row.toArray());
        }
        out.println(note());
    }

    Report report()
    {
        List<Double> batches = new ArrayList<>();
        List<Double> percent = new ArrayList<>();
        for (JsonNode row : result.get("results")) {
            batches.add(row.get("batch").asDouble());
            percent.add(row.get("overhead_fraction").asDouble() * 100);
        }
        return new Report("handoff bench scheduler: " + result.get("model").asText())
                .result(result)
                .note(note())
                .chart(Chart.line("scheduler overhead vs batch", "batch (requests in flight)", "% of the model's step time").logX()
                        .series("scheduler, no-math model", batches, percent)
                        .reference("goal: 2%", 2))
                .table("scheduler overhead per step", HEADER, rows());
    }

    private List<List<String>> rows()
    {
        List<List<String>> rows = new ArrayList<>();
        for (JsonNode row : result.get("results")) {
            rows.add(List.of(row.get("batch").asText(),
                    String.format(Locale.ROOT, "%.1f", row.get("scheduler_us_per_step").asDouble()),
                    String.format(Locale.ROOT, "%.1f", row.get("model_step_us").asDouble()),
                    String.format(Locale.ROOT, "%.2f%%", row.get("overhead_fraction").asDouble() * 100),
                    String.format(Locale.ROOT, "%.1f, %.1f", row.get("no_math_tokens_per_step").asDouble(), row.get("model_tokens_per_step").asDouble())));
        }
        return rows;
    }

    private String note()
    {
        return "scheduler us/step: wall time per step of the same requests (" + result.get("prompt_len").asInt() + "-token prompts, "
                + result.get("shared_prefix").asInt() + " shared, " + result.get("decode_tokens").asInt() + " tokens each) on an engine whose "
                + "model returns fixed logits at once; model us/step: the same on the real model, measured in the same rounds. overhead = their ratio.";
    }
}
