package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.cli.DurationConverter;
import io.handoff.chaos.ChaosProgress;
import io.handoff.core.runtime.ModelSource;
import io.handoff.inspect.TimelineFetch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.function.Consumer;

@Command(name = "serving", mixinStandardHelpOptions = true,
        description = {"Serving latency and throughput of a running server or router, measured at the client: TTFT, ITL, TPOT and E2E "
                + "(mean, p50, p90, p99), request and token throughput, goodput under SLOs. With --compare-url the same requests run "
                + "against both URLs in alternating blocks, with ratios and a token-for-token check of the outputs.",
                "Requests are POST /generate with input_ids, stream, temperature 0 and ignore_eos."})
public final class ServingCommand
        implements Callable<Integer>
{
    @Option(names = "--url", required = true, paramLabel = "URL", description = "The server or router to measure, e.g. http://127.0.0.1:30000.")
    String url;

    @Option(names = "--compare-url", paramLabel = "URL", description = "A second server or router to run the same requests against (the reference of the ratios).")
    String compareUrl;

    @Option(names = "--requests", defaultValue = "64", paramLabel = "N", description = "Measured requests per URL (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--concurrency", paramLabel = "C", description = "Closed loop: C requests in flight (the default, 8, when --rate is not given).")
    Integer concurrency;

    @Option(names = "--rate", paramLabel = "R", description = "Open loop: Poisson arrivals at R requests/s (seeded by --seed); inf sends all at once.")
    String rate;

    @Option(names = "--dataset", defaultValue = "shared-prefix", paramLabel = "NAME",
            description = "shared-prefix, random, long-prompt, mixed or multi-turn (4-turn conversations under one system prompt, each turn "
                    + "resending the history; with a router URL the KV bytes its decodes received per request are reported) (default ${DEFAULT-VALUE}).")
    String dataset;

    @Option(names = "--model-path", paramLabel = "PATH",
            description = "The served model's checkpoint directory or .gguf file: shared-prefix then sends the demo's few-shot text encoded "
                    + "with its tokenizer, and its vocabulary bounds the other datasets' ids (by default both come from the server).")
    Path modelPath;

    @Option(names = "--max-new-tokens", defaultValue = "32", paramLabel = "M",
            description = "Output tokens of shared-prefix requests and of mixed's short ones, the most of random's (default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--slo-ttft-ms", paramLabel = "MS", description = "Goodput: time to first token at most MS.")
    Double sloTtft;

    @Option(names = "--slo-itl-ms", paramLabel = "MS", description = "Goodput: every gap between two tokens of a request at most MS.")
    Double sloItl;

    @Option(names = "--slo-e2e-ms", paramLabel = "MS", description = "Goodput: end-to-end latency at most MS.")
    Double sloE2e;

    @Option(names = "--seed", defaultValue = "1", paramLabel = "S", description = "Seed of the dataset and of the arrivals (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--block", paramLabel = "N",
            description = "With --compare-url: requests per block of the alternation (default: 2 x concurrency, 16 with --rate).")
    Integer block;

    @Option(names = "--warmup", defaultValue = "2", paramLabel = "N",
            description = "Unmeasured requests sent to each URL first, one at a time (default ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--timeout", defaultValue = "300s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "Per-request timeout, e.g. 300s or 5m (default ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(names = "--json", description = "Print one JSON object on stdout; the progress bar is then shown only when stderr is a terminal.")
    boolean json;

    @Option(names = "--out", paramLabel = "DIR", description = "Write report.json and report.html (TTFT and ITL distributions side by side) into DIR.")
    Path out;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        try {
            return run();
        }
        catch (IllegalArgumentException e) {
            // a bad option value: a usage error (exit 2) that says what was wrong
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    private int run()
            throws Exception
    {
        Dataset kind = Dataset.parse(dataset);
        if (concurrency != null && rate != null) {
            throw new IllegalArgumentException("give --rate R (open loop) or --concurrency C (closed loop), not both");
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup must be 0 or more, was " + warmup);
        }
        Load load = rate != null ? new Load.Open(Load.parseRate(rate), seed) : new Load.Closed(concurrency != null ? concurrency : 8);
        int blockSize = block != null ? block : compareUrl == null ? requests : load instanceof Load.Closed c ? 2 * c.concurrency() : 16;
        Slo slo = new Slo(optional(sloTtft), optional(sloItl), optional(sloE2e));
        Duration requestTimeout = timeout;
        List<URI> urls = new ArrayList<>(List.of(parseUrl("--url", url)));
        if (compareUrl != null) {
            urls.add(parseUrl("--compare-url", compareUrl));
        }
        PrintWriter err = spec.commandLine().getErr();
        List<ServingClient> clients = new ArrayList<>();
        try {
            for (URI u : urls) {
                clients.add(new ServingClient(u, requestTimeout));
            }
            // a checkpoint given is read first: a wrong path is refused before any server is asked
            Optional<ModelSource> local = modelPath == null ? Optional.empty() : Optional.of(openLocal(modelPath));
            ServingClient.ModelInfo model;
            List<BenchRequest> all;
            try {
                ServingClient.ModelInfo served = model(clients);
                model = local.map(l -> localModel(l, served)).orElse(served);
                int count = requests + warmup;
                all = local.isPresent() && kind == Dataset.SHARED_PREFIX
                        ? Dataset.fewShot(local.get().tokenizer(), count, seed, model.maxContext(), maxNewTokens)
                        : kind.requests(count, seed, model.vocabSize(), model.maxContext(), maxNewTokens);
            }
            finally {
                local.ifPresent(ModelSource::close);
            }
            List<BenchRequest> measured = all.subList(0, requests);
            String run = "bench-" + Long.toString(System.currentTimeMillis(), 36);
            List<String> prefixes = new ArrayList<>();
            for (int side = 0; side < clients.size(); side++) {
                prefixes.add(run + "-" + (char) ('a' + side));
                for (BenchRequest request : all.subList(requests, all.size())) {
                    Sample sample = clients.get(side).generate(request, prefixes.get(side) + "-warmup-" + request.index());
                    if (!sample.completed()) {
                        throw new IllegalStateException(clients.get(side).base() + ": a warm-up request failed ("
                                + (sample.status() == 0 ? "no response" : "HTTP " + sample.status()) + "): " + sample.error().orElseThrow());
                    }
                }
            }
            List<OptionalLong> kvBefore = new ArrayList<>();
            try (HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
                KvMoved moved = new KvMoved(http);
                for (URI u : urls) {
                    kvBefore.add(moved.total(u));
                }
            }
            boolean showProgress = !json || ChaosProgress.stderrIsTerminal();
            Consumer<Sample> progress = showProgress ? new ServingProgress(err, ChaosProgress.stderrIsTerminal(), requests * clients.size()) : s -> {};
            List<InterleavedRun.SideRun> runs = new InterleavedRun(clients, prefixes).run(measured, load, blockSize, progress);
            List<ServingResult.Side> sides = new ArrayList<>();
            try (HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
                KvReadiness readiness = new KvReadiness(new TimelineFetch(http, new ObjectMapper(), Optional.empty(), Duration.ofSeconds(10)));
                KvMoved moved = new KvMoved(http);
                for (int side = 0; side < clients.size(); side++) {
                    InterleavedRun.SideRun sideRun = runs.get(side);
                    SideFigures figures = SideFigures.of(sideRun.samples(), sideRun.seconds(), slo);
                    OptionalLong before = kvBefore.get(side);
                    OptionalLong after = moved.total(urls.get(side));
                    OptionalDouble perRequest = before.isPresent() && after.isPresent() && figures.completed() > 0
                            ? OptionalDouble.of((double) (after.getAsLong() - before.getAsLong()) / figures.completed()) : OptionalDouble.empty();
                    sides.add(new ServingResult.Side(urls.get(side).toString(), sideRun.samples(), figures, readiness.measure(urls.get(side),
                            sideRun.samples()), perRequest));
                }
            }
            Optional<Comparison> comparison = sides.size() < 2 ? Optional.empty()
                    : Optional.of(Comparison.of(sides.get(0).figures(), sides.get(1).figures(), sides.get(0).samples(), sides.get(1).samples()));
            ServingResult result = new ServingResult(new ServingResult.Settings(urls.get(0).toString(), Optional.ofNullable(compareUrl).map(u -> urls.get(1).toString()),
                    kind, requests, load, maxNewTokens, seed, blockSize, warmup, slo), model, sides, comparison);
            ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            ObjectNode node = result.json(mapper);
            PrintWriter stdout = spec.commandLine().getOut();
            if (json) {
                stdout.println(mapper.writeValueAsString(node));
                stdout.flush();
            }
            else {
                result.print(stdout);
            }
            comparison.filter(c -> !c.mismatches().isEmpty()).ifPresent(c -> err.println("handoff bench serving: OUTPUT MISMATCH on "
                    + c.mismatches().size() + " of " + c.compared() + " requests (indices " + c.mismatches() + "): greedy outputs of the two URLs differ"));
            if (out != null) {
                Path html = result.report(node).write(out);
                err.println("handoff bench serving: wrote " + html + " and report.json");
            }
            err.flush();
            return 0;
        }
        finally {
            clients.forEach(ServingClient::close);
        }
    }

    /** The model of the first URL; a second URL must serve the same one, or the comparison means nothing. */
    private static ServingClient.ModelInfo model(List<ServingClient> clients)
            throws InterruptedException
    {
        ServingClient.ModelInfo model = clients.getFirst().model();
        for (ServingClient other : clients.subList(1, clients.size())) {
            ServingClient.ModelInfo second = other.model();
            if (!second.id().equals(model.id())) {
                throw new IllegalStateException("--url serves model '" + model.id() + "' and --compare-url '" + second.id()
                        + "': compare deployments of the same model");
            }
            model = second.vocabSize() < model.vocabSize() || second.maxContext() < model.maxContext()
                    ? new ServingClient.ModelInfo(model.id(), Math.min(model.vocabSize(), second.vocabSize()), Math.min(model.maxContext(), second.maxContext()),
                            model.vocabReported() && second.vocabReported())
                    : model;
        }
        return model;
    }

    private static ModelSource openLocal(Path path)
    {
        try {
            return ModelSource.open(path.toAbsolutePath().normalize(), Integer.MAX_VALUE);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--model-path: " + e.getMessage(), e);
        }
    }

    /** The served model, its vocabulary from the local checkpoint, which must be the one the server reports. */
    private ServingClient.ModelInfo localModel(ModelSource local, ServingClient.ModelInfo served)
    {
        int vocab = local.config().vocabSize();
        if (served.vocabReported() && vocab != served.vocabSize()) {
            throw new IllegalStateException("--model-path " + modelPath + " has a vocabulary of " + vocab + " tokens, the server's model '" + served.id()
                    + "' " + served.vocabSize() + ": give the checkpoint the server serves");
        }
        return new ServingClient.ModelInfo(served.id(), vocab, Math.min(served.maxContext(), local.config().maxContext()), true);
    }

    private static URI parseUrl(String option, String text)
    {
        URI uri;
        try {
            uri = URI.create(text);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + " must be an http:// URL such as http://127.0.0.1:30000, was '" + text + "'");
        }
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new IllegalArgumentException(option + " must be an http:// URL such as http://127.0.0.1:30000, was '" + text + "'");
        }
        return uri;
    }

    private static OptionalDouble optional(Double value)
    {
        return value == null ? OptionalDouble.empty() : OptionalDouble.of(value);
    }
}
