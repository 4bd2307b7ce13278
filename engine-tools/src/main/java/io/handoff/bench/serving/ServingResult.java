package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.bench.report.Chart;
import io.handoff.bench.report.Report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.Function;

import static java.util.Objects.requireNonNull;

/** A finished run: its settings, each side's samples and figures, and the comparison; as JSON, as text and as a report. */
public record ServingResult(Settings settings, ServingClient.ModelInfo model, List<Side> sides, Optional<Comparison> comparison)
{
    /** What was run. {@code rate} is empty for a closed loop, {@code concurrency} for an open one. */
    public record Settings(String url, Optional<String> compareUrl, Dataset dataset, int requests, Load load, int maxNewTokens, long seed, int block,
            int warmup, Slo slo) {}

    /** @param kvBytesPerRequest KV bytes the decodes behind the URL received per completed request; empty for a URL that is no router */
    public record Side(String url, List<Sample> samples, SideFigures figures, KvReadiness.Result kvReady, OptionalDouble kvBytesPerRequest) {}

    private static final int CDF_POINTS = 200;

    public ServingResult
    {
        requireNonNull(settings, "settings is null");
        requireNonNull(model, "model is null");
        sides = List.copyOf(sides);
        requireNonNull(comparison, "comparison is null");
    }

    public ObjectNode json(ObjectMapper mapper)
    {
        ObjectNode json = mapper.createObjectNode();
        json.put("url", settings.url());
        json.put("compare_url", settings.compareUrl().orElse(null));
        json.put("dataset", settings.dataset().label());
        json.put("requests", settings.requests());
        switch (settings.load()) {
            case Load.Closed closed -> {
                json.put("concurrency", closed.concurrency());
                json.putNull("rate");
            }
            case Load.Open open -> {
                json.putNull("concurrency");
                if (Double.isInfinite(open.rate())) {
                    json.put("rate", "inf");
                }
                else {
                    json.put("rate", open.rate());
                }
            }
        }
        json.put("max_new_tokens", settings.maxNewTokens());
        json.put("seed", settings.seed());
        json.put("block", settings.block());
        json.put("warmup", settings.warmup());
        ObjectNode modelNode = json.putObject("model");
        modelNode.put("id", model.id());
        modelNode.put("vocab_size", model.vocabSize());
        modelNode.put("vocab_reported", model.vocabReported());
        modelNode.put("max_model_len", model.maxContext());
        ObjectNode slo = json.putObject("slo");
        put(slo, "ttft_ms", settings.slo().ttftMillis());
        put(slo, "itl_ms", settings.slo().itlMillis());
        put(slo, "e2e_ms", settings.slo().e2eMillis());
        ObjectNode results = json.putObject("results");
        results.set("url", side(mapper, sides.get(0)));
        results.set("compare_url", sides.size() > 1 ? side(mapper, sides.get(1)) : null);
        if (comparison.isPresent()) {
            Comparison c = comparison.get();
            ObjectNode ratios = json.putObject("ratios");
            c.ratios().forEach((name, value) -> put(ratios, name, value));
            put(ratios, "kv_ready_after_last_forward_p50", kvReadyRatio());
            json.put("outputs_compared", c.compared());
            json.put("outputs_equal", c.outputsEqual());
            c.mismatches().forEach(json.putArray("output_mismatches")::add);
        }
        else {
            json.putNull("ratios");
            json.putNull("outputs_equal");
        }
        return json;
    }

    /** Early send on vs off: both URLs are routers, and the median of their last-forward to KV-ready times compares. */
    private OptionalDouble kvReadyRatio()
    {
        return sides.size() < 2 ? OptionalDouble.empty()
                : Comparison.ratio(sides.get(0).kvReady().millis(), sides.get(1).kvReady().millis(), Distribution::p50);
    }

    private static ObjectNode side(ObjectMapper mapper, Side side)
    {
        SideFigures f = side.figures();
        ObjectNode json = mapper.createObjectNode();
        json.put("url", side.url());
        distribution(json, "ttft_ms", f.ttft());
        distribution(json, "itl_ms", f.itl());
        distribution(json, "tpot_ms", f.tpot());
        distribution(json, "e2e_ms", f.e2e());
        json.put("request_throughput", round(f.requestThroughput()));
        json.put("output_token_throughput", round(f.outputTokenThroughput()));
        json.put("input_token_throughput", round(f.inputTokenThroughput()));
        json.put("completed", f.completed());
        json.put("failed", f.failed());
        var failures = json.putArray("failures");
        f.failures().forEach(failure -> failures.addObject().put("status", failure.status()).put("reason", failure.reason()).put("count", failure.count()));
        put(json, "goodput", f.goodput());
        json.put("duration_s", round(f.seconds()));
        distribution(json, "kv_ready_after_last_forward_ms", side.kvReady().millis());
        json.put("kv_ready_measured", side.kvReady().measured());
        json.put("kv_ready_note", side.kvReady().note().isEmpty() ? null : side.kvReady().note());
        put(json, "kv_bytes_per_request", side.kvBytesPerRequest());
        return json;
    }

    private static void distribution(ObjectNode json, String field, Optional<Distribution> distribution)
    {
        if (distribution.isEmpty()) {
            json.putNull(field);
            return;
        }
        Distribution d = distribution.get();
        json.putObject(field).put("mean", round(d.mean())).put("p50", round(d.p50())).put("p90", round(d.p90())).put("p99", round(d.p99()));
    }

    private static void put(ObjectNode json, String field, OptionalDouble value)
    {
        if (value.isPresent()) {
            json.put(field, round(value.getAsDouble()));
        }
        else {
            json.putNull(field);
        }
    }

    static double round(double value)
    {
        return Math.round(value * 1000) / 1000.0;
    }

    /** The text report: one column per URL, then the ratios and the output check. */
    public void print(PrintWriter out)
    {
        out.printf("bench serving: %s, %d requests, %s, max-new-tokens %d, seed %d, model %s%n", settings.dataset().label(), settings.requests(),
                loadText(), settings.maxNewTokens(), settings.seed(), model.id());
        for (List<String> row : rows()) {
            out.printf(sides.size() > 1 ? "%-28s %20s %20s%n" : "%-28s %20s%n", row.toArray());
        }
        comparison.ifPresent(c -> {
            out.println("ratios (url / compare-url):");
            c.ratios().forEach((name, value) -> out.printf("  %-26s %s%n", name, text(value)));
            out.printf("outputs equal: %d of %d requests completed on both%n", c.outputsEqual(), c.compared());
            if (!c.mismatches().isEmpty()) {
                out.println("OUTPUT MISMATCH: requests " + c.mismatches() + " produced different tokens on the two URLs with greedy decoding;"
                        + " a disaggregated deployment must equal a colocated one bit for bit: this is a bug");
            }
        });
        for (Side side : sides) {
            side.figures().failures().forEach(f -> out.printf("failed on %s: %d x %s%s%n", side.url(), f.count(),
                    f.status() == 0 ? "no response" : "HTTP " + f.status(), ": " + f.reason()));
            if (!side.kvReady().note().isEmpty() && side.kvReady().measured() > 0) {
                out.println("kv ready on " + side.url() + ": " + side.kvReady().note());
            }
        }
        out.flush();
    }

    private String loadText()
    {
        return switch (settings.load()) {
            case Load.Closed closed -> "concurrency " + closed.concurrency();
            case Load.Open open -> "rate " + (Double.isInfinite(open.rate()) ? "inf" : open.rate() + " req/s") + " (Poisson, seed " + open.seed() + ")";
        };
    }

    /** The table of figures, a row per figure and a column per URL (header first). */
    List<List<String>> rows()
    {
        List<List<String>> rows = new ArrayList<>();
        List<String> header = new ArrayList<>(List.of("figure"));
        sides.forEach(s -> header.add(s.url()));
        rows.add(header);
        addDistribution(rows, "TTFT ms", SideFigures::ttft);
        addDistribution(rows, "ITL ms", SideFigures::itl);
        addDistribution(rows, "TPOT ms", SideFigures::tpot);
        addDistribution(rows, "E2E ms", SideFigures::e2e);
        addRow(rows, "requests/s", s -> number(s.figures().requestThroughput()));
        addRow(rows, "output tokens/s", s -> number(s.figures().outputTokenThroughput()));
        addRow(rows, "input tokens/s", s -> number(s.figures().inputTokenThroughput()));
        addRow(rows, "completed / failed", s -> s.figures().completed() + " / " + s.figures().failed());
        addRow(rows, "goodput req/s", s -> text(s.figures().goodput()));
        addRow(rows, "KV ready after fwd p50/p99", s -> s.kvReady().millis().map(d -> number(d.p50()) + " / " + number(d.p99())).orElse("-"));
        addRow(rows, "KV bytes moved/request", s -> text(s.kvBytesPerRequest()));
        return rows;
    }

    private void addDistribution(List<List<String>> rows, String name, Function<SideFigures, Optional<Distribution>> figure)
    {
        addRow(rows, name + " mean", s -> figure.apply(s.figures()).map(d -> number(d.mean())).orElse("-"));
        addRow(rows, name + " p50", s -> figure.apply(s.figures()).map(d -> number(d.p50())).orElse("-"));
        addRow(rows, name + " p90", s -> figure.apply(s.figures()).map(d -> number(d.p90())).orElse("-"));
        addRow(rows, name + " p99", s -> figure.apply(s.figures()).map(d -> number(d.p99())).orElse("-"));
    }

    private void addRow(List<List<String>> rows, String name, Function<Side, String> cell)
    {
        List<String> row = new ArrayList<>(List.of(name));
        sides.forEach(s -> row.add(cell.apply(s)));
        rows.add(row);
    }

    private static String number(double value)
    {
        return String.format(Locale.ROOT, "%.2f", value);
    }

    private static String text(OptionalDouble value)
    {
        return value.isPresent() ? number(value.getAsDouble()) : "-";
    }

    /** The HTML report: a CDF chart of TTFT and of ITL with one series per URL, the figures table and the ratios. */
    public Report report(ObjectNode json)
    {
        Report report = new Report("handoff bench serving: " + settings.dataset().label() + ", " + settings.requests() + " requests, " + loadText())
                .result(json)
                .note("Latencies are measured at the client from the streamed chunks; every side runs the same requests"
                        + (sides.size() > 1 ? ", in alternating blocks of " + settings.block() + " (A B, B A, ...), so both see the machine's load of the same minutes." : "."));
        Chart ttft = Chart.line("TTFT distribution", "time to first token (ms)", "fraction of requests");
        Chart itl = Chart.line("ITL distribution", "inter-token latency (ms)", "fraction of token gaps");
        for (Side side : sides) {
            Cdf ttftCdf = Cdf.of(side.samples().stream().filter(Sample::completed).mapToDouble(Sample::ttftMillis).toArray(), CDF_POINTS);
            Cdf itlCdf = Cdf.of(SideFigures.itls(side.samples()), CDF_POINTS);
            if (ttftCdf.x().length > 0) {
                ttft.series(side.url(), ttftCdf.x(), ttftCdf.y());
            }
            if (itlCdf.x().length > 0) {
                itl.series(side.url(), itlCdf.x(), itlCdf.y());
            }
        }
        report.chart(ttft).chart(itl);
        List<List<String>> rows = rows();
        report.table("Figures", rows.getFirst(), rows.subList(1, rows.size()));
        comparison.ifPresent(c -> {
            List<List<String>> ratioRows = new ArrayList<>();
            c.ratios().forEach((name, value) -> ratioRows.add(List.of(name, text(value))));
            ratioRows.add(List.of("outputs equal", c.outputsEqual() + " of " + c.compared()));
            report.table("Ratios (url / compare-url)", List.of("figure", "ratio"), ratioRows);
        });
        return report;
    }
}
