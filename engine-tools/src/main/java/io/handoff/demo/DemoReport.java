package io.handoff.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * What one demo run found: how many requests completed, how many produced exactly the colocated
 * engine's tokens, client-side latencies next to the colocated ones from the same run, the KV the
 * prefills sent, pages not given back, and the early-send decision. Printed as a short table or as one
 * JSON object.
 *
 * @param matched requests whose output ids equal the colocated engine's (a failed request never matches)
 * @param errors the distinct reasons requests failed (the first few)
 * @param notes what could not be measured, and why
 */
public record DemoReport(
        Setup setup,
        int requests,
        int completed,
        int matched,
        int distinctOutputTokens,
        Optional<Percentiles> ttft,
        Optional<Percentiles> itl,
        Optional<Percentiles> colocatedTtft,
        Optional<Percentiles> colocatedItl,
        ServerFigures servers,
        List<String> errors,
        List<String> notes,
        Optional<String> logDir)
{
    static final int MAX_ERRORS = 5;
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * How the run was set up.
     *
     * @param inProcess the servers ran as threads of the demo's JVM, not as processes
     * @param colocatedStandIns colocated servers stood in for the prefills and decodes, without a router
     */
    public record Setup(boolean inProcess, boolean colocatedStandIns, int prefills, int decodes, int concurrency, int maxNewTokens,
            String model, String attention, String transferBackend, int prefillDataParallel, int decodeDataParallel)
    {
        public Setup(boolean inProcess, boolean colocatedStandIns, int prefills, int decodes, int concurrency, int maxNewTokens,
                String model, String attention, String transferBackend)
        {
            this(inProcess, colocatedStandIns, prefills, decodes, concurrency, maxNewTokens, model, attention, transferBackend, 1, 1);
        }

        public Setup
        {
            requireNonNull(model, "model is null");
            requireNonNull(attention, "attention is null");
            requireNonNull(transferBackend, "transferBackend is null");
        }
    }

    public DemoReport
    {
        requireNonNull(setup, "setup is null");
        requireNonNull(ttft, "ttft is null");
        requireNonNull(itl, "itl is null");
        requireNonNull(colocatedTtft, "colocatedTtft is null");
        requireNonNull(colocatedItl, "colocatedItl is null");
        requireNonNull(servers, "servers is null");
        errors = List.copyOf(errors);
        notes = List.copyOf(notes);
        requireNonNull(logDir, "logDir is null");
    }

    /** Compares the disaggregated results with the colocated ones, request by request (both in request order). */
    public static DemoReport of(Setup setup, List<RequestResult> disaggregated, List<RequestResult> colocated, ServerFigures servers,
            List<String> notes, Optional<String> logDir)
    {
        if (disaggregated.size() != colocated.size()) {
            throw new IllegalArgumentException("disaggregated results (" + disaggregated.size() + ") and colocated ones ("
                    + colocated.size() + ") are for different requests");
        }
        int matched = 0;
        Set<Integer> tokens = new HashSet<>();
        Set<String> errors = new LinkedHashSet<>();
        for (int i = 0; i < disaggregated.size(); i++) {
            RequestResult result = disaggregated.get(i);
            RequestResult reference = colocated.get(i);
            if (result.completed()) {
                Arrays.stream(result.outputIds()).forEach(tokens::add);
                if (reference.completed() && Arrays.equals(result.outputIds(), reference.outputIds())) {
                    matched++;
                }
            }
            else if (errors.size() < MAX_ERRORS) {
                errors.add(result.error().orElseThrow());
            }
        }
        int completed = (int) disaggregated.stream().filter(RequestResult::completed).count();
        return new DemoReport(setup, disaggregated.size(), completed, matched, tokens.size(),
                Percentiles.of(ttfts(disaggregated)), Percentiles.of(gaps(disaggregated)),
                Percentiles.of(ttfts(colocated)), Percentiles.of(gaps(colocated)),
                servers, List.copyOf(errors), notes, logDir);
    }

    private static double[] ttfts(List<RequestResult> results)
    {
        return results.stream().filter(RequestResult::completed).mapToDouble(RequestResult::ttftMillis).filter(t -> !Double.isNaN(t)).toArray();
    }

    private static double[] gaps(List<RequestResult> results)
    {
        return results.stream().filter(RequestResult::completed).flatMapToDouble(r -> Arrays.stream(r.interTokenMillis())).toArray();
    }

    public int failed()
    {
        return requests - completed;
    }

    public double exactMatch()
    {
        return requests == 0 ? 0 : (double) matched / requests;
    }

    public ObjectNode toJson()
    {
        ObjectNode json = JSON.createObjectNode();
        json.put("requests", requests);
        json.put("completed", completed);
        json.put("failed", failed());
        json.put("exact_match", round(exactMatch(), 6));
        json.put("matched", matched);
        json.put("distinct_output_tokens", distinctOutputTokens);
        json.put("model", setup.model());
        json.put("attention", setup.attention());
        json.put("transfer_backend", setup.transferBackend());
        json.put("transport", servers.bootstrap().transport().orElse(null));
        ObjectNode early = json.putObject("early_send");
        BootstrapInfo.EarlySend earlySend = servers.bootstrap().earlySend();
        early.put("requested", earlySend.requested().orElse(null));
        early.put("enabled", earlySend.enabled().orElse(null));
        early.put("reason", earlySend.reason().orElse(null));
        putPercentiles(json, "ttft_ms", ttft);
        putPercentiles(json, "itl_ms", itl);
        putPercentiles(json, "colocated_ttft_ms", colocatedTtft);
        putPercentiles(json, "colocated_itl_ms", colocatedItl);
        putNumber(json, "kv_bytes_transferred", servers.kvBytesTransferred(), 0);
        putNumber(json, "transfer_busy_seconds", servers.transferBusySeconds(), 6);
        putNumber(json, "transfer_gbps", servers.transferGbps(), 6);
        putNumber(json, "kv_early_bytes", servers.earlyBytes(), 0);
        putNumber(json, "prompt_tokens", servers.promptTokens(), 0);
        putNumber(json, "kv_bytes_per_prompt_token", servers.kvBytesPerPromptToken(), 3);
        putKvShape(json, servers.bootstrap().kv());
        ObjectNode layout = json.putObject("layout");
        ObjectNode prefillLayout = layout.putObject("prefill");
        if (servers.bootstrap().tensorParallel().isPresent()) {
            prefillLayout.put("tp", servers.bootstrap().tensorParallel().getAsInt());
        }
        else {
            prefillLayout.putNull("tp");
        }
        prefillLayout.put("dp", Math.max(1, setup.prefillDataParallel()));
        ObjectNode decodeLayout = layout.putObject("decode");
        if (servers.kvBytesPerDecodeRank().isEmpty()) {
            decodeLayout.putNull("tp");
            json.putNull("kv_bytes_per_decode_rank");
        }
        else {
            // a data-parallel decode's ranks each hold their own requests' KV: one entry per rank too
            decodeLayout.put("tp", setup.decodeDataParallel() > 1 ? 1 : servers.kvBytesPerDecodeRank().size());
            com.fasterxml.jackson.databind.node.ArrayNode perRank = json.putArray("kv_bytes_per_decode_rank");
            servers.kvBytesPerDecodeRank().forEach(bytes -> perRank.add(Math.round(bytes)));
        }
        decodeLayout.put("dp", Math.max(1, setup.decodeDataParallel()));
        putNumber(json, "kv_ready_after_last_forward_ms", servers.kvReadyAfterForwardMs(), 3);
        ObjectNode leaked = json.putObject("pages_leaked");
        putInteger(leaked, "prefill", servers.leakedPrefillPages());
        putInteger(leaked, "decode", servers.leakedDecodePages());
        json.put("in_process", setup.inProcess());
        json.put("colocated_stand_ins", setup.colocatedStandIns());
        json.put("prefills", setup.prefills());
        json.put("decodes", setup.decodes());
        json.put("concurrency", setup.concurrency());
        json.put("max_new_tokens", setup.maxNewTokens());
        errors.forEach(json.putArray("errors")::add);
        notes.forEach(json.putArray("notes")::add);
        json.put("log_dir", logDir.orElse(null));
        return json;
    }

    private static void putPercentiles(ObjectNode json, String field, Optional<Percentiles> percentiles)
    {
        if (percentiles.isEmpty()) {
            json.putNull(field);
            return;
        }
        ObjectNode node = json.putObject(field);
        node.put("p50", round(percentiles.get().p50(), 3));
        node.put("p99", round(percentiles.get().p99(), 3));
    }

    private static void putNumber(ObjectNode json, String field, OptionalDouble value, int decimals)
    {
        if (value.isEmpty()) {
            json.putNull(field);
        }
        else if (decimals == 0) {
            json.put(field, Math.round(value.getAsDouble()));
        }
        else {
            json.put(field, round(value.getAsDouble(), decimals));
        }
    }

    private static void putKvShape(ObjectNode json, Optional<BootstrapInfo.KvShape> shape)
    {
        if (shape.isEmpty()) {
            json.putNull("kv");
            return;
        }
        ObjectNode kv = json.putObject("kv");
        kv.put("layout", shape.get().layout());
        kv.put("heads", shape.get().heads());
        kv.put("head_dim", shape.get().headDim());
        kv.put("dtype", shape.get().dtype());
        kv.put("bytes_per_token", shape.get().bytesPerToken());
    }

    private static void putInteger(ObjectNode json, String field, OptionalInt value)
    {
        if (value.isEmpty()) {
            json.putNull(field);
        }
        else {
            json.put(field, value.getAsInt());
        }
    }

    private static double round(double value, int decimals)
    {
        double scale = Math.pow(10, decimals);
        return Math.round(value * scale) / scale;
    }

    /** The report for people: a verdict line, then one row per figure. */
    public String toTable()
    {
        StringBuilder out = new StringBuilder();
        out.append(verdict()).append('\n');
        row(out, "servers", setup.prefills() + " prefill + " + setup.decodes() + " decode"
                + (setup.colocatedStandIns() ? " (colocated stand-ins, no router)" : " + router")
                + (setup.inProcess() ? ", threads of this process" : ", one process each"));
        row(out, "model / attention", setup.model() + " / " + setup.attention());
        row(out, "transfer", setup.transferBackend() + ", transport " + servers.bootstrap().transport().orElse("unknown"));
        row(out, "requests", requests + " (concurrency " + setup.concurrency() + ", " + setup.maxNewTokens() + " new tokens each)");
        row(out, "completed", Integer.toString(completed));
        row(out, "failed", Integer.toString(failed()));
        row(out, "exact match", format("%.3f (%d of %d equal to the colocated engine)", exactMatch(), matched, requests));
        row(out, "distinct output tokens", Integer.toString(distinctOutputTokens));
        row(out, "TTFT p50 / p99", latency(ttft) + "   colocated: " + latency(colocatedTtft));
        row(out, "ITL p50 / p99", latency(itl) + "   colocated: " + latency(colocatedItl));
        row(out, "KV transferred", servers.kvBytesTransferred().isPresent()
                ? format("%.1f MiB", servers.kvBytesTransferred().getAsDouble() / (1 << 20))
                + (servers.transferGbps().isPresent() ? format(" at %.3f GB/s while busy", servers.transferGbps().getAsDouble()) : "")
                : "unknown (the prefill exports no handoff_kv_transfer_bytes_total)");
        row(out, "KV per token", kvPerToken());
        if (servers.kvBytesPerDecodeRank().size() > 1 || servers.bootstrap().tensorParallel().orElse(1) > 1) {
            row(out, "tensor-parallel", "prefill " + servers.bootstrap().tensorParallel().stream().mapToObj(Integer::toString).findFirst().orElse("unknown")
                    + " ranks, decode " + (servers.kvBytesPerDecodeRank().isEmpty() ? "unknown" : servers.kvBytesPerDecodeRank().size()) + " ranks"
                    + (servers.kvBytesPerDecodeRank().isEmpty() ? "" : "; KV received per decode rank (MiB): " + servers.kvBytesPerDecodeRank().stream()
                            .map(bytes -> format("%.2f", bytes / (1 << 20))).collect(java.util.stream.Collectors.joining(", "))));
        }
        row(out, "pages leaked", "prefill " + count(servers.leakedPrefillPages()) + ", decode " + count(servers.leakedDecodePages()));
        row(out, "early send", earlySend());
        errors.forEach(error -> row(out, "error", error));
        notes.forEach(note -> row(out, "note", note));
        logDir.ifPresent(dir -> row(out, "server logs", dir));
        return out.toString();
    }

    private String verdict()
    {
        if (completed == 0) {
            return "handoff demo: FAILED: none of the " + requests + " requests completed";
        }
        if (matched == requests) {
            return "handoff demo: OK: all " + requests + " requests produced exactly the colocated engine's tokens";
        }
        return "handoff demo: MISMATCH: " + (requests - matched) + " of " + requests + " requests did not produce the colocated engine's tokens"
                + (failed() > 0 ? " (" + failed() + " failed)" : "");
    }

    private String kvPerToken()
    {
        String shape = servers.bootstrap().kv().map(kv -> format("%d B in the pool (%s, %d head%s x %d, %s)", kv.bytesPerToken(), kv.layout(),
                kv.heads(), kv.heads() == 1 ? "" : "s", kv.headDim(), kv.dtype())).orElse("unknown (no kv in the prefill's /bootstrap)");
        return shape + (servers.kvBytesPerPromptToken().isPresent()
                ? format("; %.1f B sent per prompt token (%d prompt tokens)", servers.kvBytesPerPromptToken().getAsDouble(),
                Math.round(servers.promptTokens().getAsDouble()))
                : "");
    }

    private String earlySend()
    {
        BootstrapInfo.EarlySend early = servers.bootstrap().earlySend();
        if (early.enabled().isEmpty() && early.requested().isEmpty()) {
            return "unknown (no /bootstrap answer from the prefill)";
        }
        return early.enabled().map(on -> on ? "enabled" : "disabled").orElse("unknown")
                + early.requested().map(mode -> " (requested " + mode + ")").orElse("")
                + early.reason().map(reason -> ": " + reason).orElse("");
    }

    private static void row(StringBuilder out, String name, String value)
    {
        out.append(String.format(Locale.ROOT, "  %-24s %s%n", name, value));
    }

    private static String latency(Optional<Percentiles> percentiles)
    {
        return percentiles.map(p -> format("%.1f / %.1f ms", p.p50(), p.p99())).orElse("n/a");
    }

    private static String count(OptionalInt value)
    {
        return value.isPresent() ? Integer.toString(value.getAsInt()) : "unknown";
    }

    private static String format(String format, Object... args)
    {
        return String.format(Locale.ROOT, format, args);
    }
}
