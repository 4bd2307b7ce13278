package io.handoff.bench.transfer;

import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code handoff bench transfer}: a KV-shaped payload moved between two processes through a backend's real data path. */
@Command(name = "transfer", mixinStandardHelpOptions = true,
        description = "Moves a KV-shaped payload (page runs x layers, K and V regions per layer) from this process to a receiver process "
                + "through a transfer backend's data path, rounds after a warm-up, verifies the bytes that landed, and compares with "
                + "single-thread memcpy of the same pages (rounds interleaved) and, for nixl and mooncake tcp, ucx_perftest put.")
public final class TransferBenchCommand
        implements Callable<Integer>
{
    /** Page sizes a report's chart sweeps when one page size was given. */
    static final List<Long> CHART_PAGE_BYTES = List.of(4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20);

    @Mixin
    ConfigOptions config;

    @Option(names = "--transfer-backend", paramLabel = "ID", description = "Transfer backend (mooncake, mori, nixl, or a plugin's id).")
    String backend;

    /** The old spelling of --transfer-backend. */
    @Option(names = "--backend", hidden = true, paramLabel = "ID")
    void backend(String id)
    {
        backend = id;
    }

    @Option(names = "--transport", paramLabel = "T",
            description = "mooncake: tcp, shm or auto (handoff.plugins.mooncake.transport); nixl: UCX transports, e.g. tcp or posix,self "
                    + "(handoff.plugins.nixl.tls); mori: shm only.")
    String transport;

    @Option(names = "--bytes", defaultValue = "256MiB", paramLabel = "SIZE", description = "Bytes one round moves (default ${DEFAULT-VALUE}).")
    String bytes;

    @Option(names = "--page-bytes", defaultValue = "64KiB", split = ",", paramLabel = "SIZE",
            description = "Bytes of a page in one region; a comma list sweeps them (default ${DEFAULT-VALUE}).")
    List<String> pageBytes;

    @Option(names = "--layers", defaultValue = "8", paramLabel = "L", description = "Layers: the pool has 2 x L regions (default ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--scatter", description = "Send each page to a seeded random destination page, no two neighbours adjacent (a fragmented decode pool).")
    boolean scatter;

    @Option(names = "--tensor-parallel", paramLabel = "P:D", description = "The head-sliced pattern: the pool is a model's of 8 KV heads "
            + "and 16-token pages spread over P sending and D receiving tensor-parallel ranks (1, 2, 4 or 8), and each receiving rank gets "
            + "exactly its heads of every token slot, as between a prefill and a decode of those layouts; memcpy copies the same slices.")
    String tensorParallel;

    @Option(names = "--rounds", defaultValue = "5", paramLabel = "N", description = "Timed rounds after the warm-up (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "1", description = "Seed of the payload and of the scattered mapping (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @Option(names = "--out", paramLabel = "DIR", description = "Write report.json and report.html (bandwidth vs page size) to DIR.")
    Path out;

    @Option(names = "--flip-byte-for-testing", hidden = true)
    boolean flipByte;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (backend == null) {
            throw new ParameterException(spec.commandLine(), "missing required option --transfer-backend (mooncake, mori, nixl, or a plugin's id)");
        }
        if (rounds < 1) {
            throw new ParameterException(spec.commandLine(), "--rounds must be at least 1, was " + rounds);
        }
        List<PayloadShape> shapes = shapes();
        Map<String, String> backendSettings = backendSettings();
        Path launcher = Engine.home().resolve("bin").resolve("handoff");
        if (!Files.isExecutable(launcher)) {
            throw new ParameterException(spec.commandLine(), "no launcher at " + launcher + ": the receiver is a process of the distribution; "
                    + "run bench transfer from one (bin/handoff bench transfer)");
        }
        PrintWriter err = spec.commandLine().getErr();
        List<TransferFigures> figures = new ArrayList<>();
        List<TransferFigures> chartOnly = new ArrayList<>();
        try (Engine engine = Engine.start(config.source(backendSettings))) {
            TransferBench bench = new TransferBench(engine, ucxReference(engine, new TransferBench.Settings(rounds, scatter, seed,
                    shape -> receiverCommand(launcher, backendSettings, shape), null, null, Long.MAX_VALUE)), line -> {
                        err.println(line);
                        err.flush();
                    });
            for (PayloadShape shape : shapes) {
                figures.add(bench.measure(shape));
            }
            if (out != null && shapes.size() == 1) {
                for (PayloadShape shape : chartShapes(shapes.getFirst())) {
                    chartOnly.add(bench.measure(shape));
                }
            }
        }
        TransferBenchOutput output = new TransferBenchOutput(figures, chartOnly);
        PrintWriter stdout = spec.commandLine().getOut();
        if (json) {
            stdout.println(output.jsonText());
        }
        else {
            output.printText(stdout);
        }
        if (out != null) {
            Path written = output.report().write(out);
            err.println("report written to " + written);
        }
        stdout.flush();
        return 0;
    }

    private List<PayloadShape> shapes()
    {
        long total = parse("--bytes", bytes);
        List<PayloadShape> shapes = new ArrayList<>();
        for (String size : pageBytes) {
            PayloadShape shape = shape(total, parse("--page-bytes", size));
            if (scatter && shape.pages() < PayloadShape.MIN_SCATTER_PAGES) {
                throw new ParameterException(spec.commandLine(), "--scatter needs at least " + PayloadShape.MIN_SCATTER_PAGES
                        + " pages per region; --bytes " + bytes + " at --page-bytes " + size + " and " + layers + " layers has " + shape.pages()
                        + ": raise --bytes or lower --page-bytes or --layers");
            }
            shapes.add(shape);
        }
        return shapes;
    }

    /** The default page sizes that fit the same payload, other than the one given. */
    private List<PayloadShape> chartShapes(PayloadShape given)
    {
        List<PayloadShape> shapes = new ArrayList<>();
        for (long size : CHART_PAGE_BYTES) {
            long perPage = size * given.regions();
            long pages = given.bytes() / perPage;
            if (size != given.pageBytes() && given.bytes() % perPage == 0 && pages >= (scatter ? PayloadShape.MIN_SCATTER_PAGES : 1)
                    && pages <= Integer.MAX_VALUE) {
                shapes.add(given.withPageBytes(size));
            }
        }
        return shapes;
    }

    private PayloadShape shape(long total, long page)
    {
        try {
            int[] ranks = ranks();
            return new PayloadShape(total, page, layers, ranks[0], ranks[1]);
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** {@code --tensor-parallel P:D} as {P, D}; {1, 1} without it. */
    private int[] ranks()
    {
        if (tensorParallel == null) {
            return new int[] {1, 1};
        }
        String[] parts = tensorParallel.split(":");
        try {
            if (parts.length == 2) {
                return new int[] {Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip())};
            }
        }
        catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException("--tensor-parallel '" + tensorParallel + "' is not P:D, e.g. 2:4");
    }

    private long parse(String option, String text)
    {
        try {
            return ByteSize.parse(option, text);
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** The backend, and --transport as the backend's own setting, for this process and the receiver alike. */
    private Map<String, String> backendSettings()
    {
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("handoff.disaggregation.transfer-backend", backend);
        if (!config.overrides.containsKey("handoff.logging.level")) {
            // the two processes' start-up lines would bury the figures
            settings.put("handoff.logging.level", "warn");
        }
        if (transport != null) {
            switch (backend) {
                case "mooncake" -> settings.put("handoff.plugins.mooncake.transport", transport);
                case "nixl" -> settings.put("handoff.plugins.nixl.tls", transport);
                case "mori" -> {
                    if (!transport.equals("shm")) {
                        throw new ParameterException(spec.commandLine(), "mori moves pages over shared memory on one host only (it has no RDMA "
                                + "data path yet): --transport shm, or leave it out");
                    }
                }
                default -> throw new ParameterException(spec.commandLine(), "--transport is known for mooncake (handoff.plugins.mooncake.transport) "
                        + "and nixl (handoff.plugins.nixl.tls); for '" + backend + "' set its own key with -Dhandoff.plugins." + backend + ".KEY=VALUE");
            }
        }
        return settings;
    }

    /** ucx_perftest runs on the transport of nixl (its tls) and of mooncake tcp; other backends are compared with memcpy only. */
    private static TransferBench.Settings ucxReference(Engine engine, TransferBench.Settings plain)
    {
        var config = engine.config().config();
        String id = config.getString("handoff.disaggregation.transfer-backend");
        Map<String, String> environment = new LinkedHashMap<>();
        long cap = Long.MAX_VALUE;
        if (id.equals("nixl")) {
            String tls = config.getString("handoff.plugins.nixl.tls").strip();
            if (!tls.isEmpty()) {
                environment.put("UCX_TLS", tls);
            }
            if (!config.getBoolean("handoff.plugins.nixl.allow-unauthenticated-network")) {
                environment.put("UCX_NET_DEVICES", "lo");
            }
        }
        else if (id.equals("mooncake") && config.getString("handoff.plugins.mooncake.transport").toLowerCase(Locale.ROOT).equals("tcp")) {
            environment.put("UCX_TLS", "tcp");
            environment.put("UCX_NET_DEVICES", "lo");
            cap = config.getBytes("handoff.plugins.mooncake.max-frame-bytes");
        }
        else {
            return new TransferBench.Settings(plain.rounds(), plain.scatter(), plain.seed(), plain.receiverCommand(), null,
                    "ucx_perftest is the reference of nixl and mooncake tcp only; " + id + " here is compared with memcpy", Long.MAX_VALUE);
        }
        return new TransferBench.Settings(plain.rounds(), plain.scatter(), plain.seed(), plain.receiverCommand(), Map.copyOf(environment), null, cap);
    }

    private List<String> receiverCommand(Path launcher, Map<String, String> backendSettings, PayloadShape shape)
    {
        List<String> command = new ArrayList<>(List.of(launcher.toString(), "bench", "transfer-receiver", "--bytes", Long.toString(shape.bytes()),
                "--page-bytes", Long.toString(shape.pageBytes()), "--layers", Integer.toString(shape.layers()),
                "--sender-ranks", Integer.toString(shape.senderRanks()), "--receiver-ranks", Integer.toString(shape.receiverRanks())));
        command.addAll(config.arguments(backendSettings));
        if (flipByte) {
            command.add("--flip-byte-for-testing");
        }
        return command;
    }
}
