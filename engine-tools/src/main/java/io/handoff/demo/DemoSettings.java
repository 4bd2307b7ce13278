package io.handoff.demo;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What {@code handoff demo} was asked to do, and the servers that follows from it.
 *
 * @param overrides the {@code -D} overrides given to the demo, passed on to every server in this order
 * @param colocatedStandIns run {@code serve --role colocated} in place of each prefill and decode and send the
 *         requests straight to the first decode, without a router: exercises the demo itself where no
 *         disaggregated server exists
 * @param prefillTensorParallel tensor-parallel ranks of each prefill, or 0 for what the configuration says
 * @param decodeTensorParallel the same for each decode
 * @param prefillDataParallel data-parallel attention ranks of each prefill, or 0 for what the configuration says
 * @param decodeDataParallel the same for each decode
 */
public record DemoSettings(
        int requests,
        long seed,
        int maxNewTokens,
        int concurrency,
        int prefills,
        int decodes,
        String transferBackend,
        Optional<String> model,
        Optional<String> attention,
        Optional<Path> configFile,
        Map<String, String> overrides,
        boolean inProcess,
        boolean colocatedStandIns,
        Duration startupTimeout,
        Duration requestTimeout,
        Duration stopGrace,
        int prefillTensorParallel,
        int decodeTensorParallel,
        int prefillDataParallel,
        int decodeDataParallel)
{
    public static final String TRANSFER_BACKEND_KEY = "handoff.disaggregation.transfer-backend";
    public static final String MODEL_KEY = "handoff.model.name";
    public static final String ATTENTION_KEY = "handoff.attention.backend";
    public static final String TENSOR_PARALLEL_KEY = "handoff.parallel.tensor-size";
    public static final String DATA_PARALLEL_KEY = "handoff.parallel.data-parallel-size";

    /** The servers to start (prefills and decodes, then the router) and where requests go. */
    public record Plan(List<List<NodeSpec>> stages, URI entry)
    {
        public Plan
        {
            stages = stages.stream().map(List::copyOf).toList();
            requireNonNull(entry, "entry is null");
        }

        public List<NodeSpec> nodes(NodeSpec.Role role)
        {
            return stages.stream().flatMap(List::stream).filter(node -> node.role() == role).toList();
        }
    }

    public DemoSettings
    {
        positive("requests", requests);
        positive("max-new-tokens", maxNewTokens);
        positive("concurrency", concurrency);
        positive("prefill", prefills);
        positive("decode", decodes);
        requireNonNull(transferBackend, "transferBackend is null");
        requireNonNull(model, "model is null");
        requireNonNull(attention, "attention is null");
        requireNonNull(configFile, "configFile is null");
        overrides = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(overrides, "overrides is null")));
        requireNonNull(startupTimeout, "startupTimeout is null");
        requireNonNull(requestTimeout, "requestTimeout is null");
        requireNonNull(stopGrace, "stopGrace is null");
        tensorParallel("prefill-tp", prefillTensorParallel);
        tensorParallel("decode-tp", decodeTensorParallel);
        tensorParallel("prefill-dp", prefillDataParallel);
        tensorParallel("decode-dp", decodeDataParallel);
    }

    public DemoSettings(int requests, long seed, int maxNewTokens, int concurrency, int prefills, int decodes, String transferBackend,
            Optional<String> model, Optional<String> attention, Optional<Path> configFile, Map<String, String> overrides, boolean inProcess,
            boolean colocatedStandIns, Duration startupTimeout, Duration requestTimeout, Duration stopGrace)
    {
        this(requests, seed, maxNewTokens, concurrency, prefills, decodes, transferBackend, model, attention, configFile, overrides, inProcess,
                colocatedStandIns, startupTimeout, requestTimeout, stopGrace, 0, 0, 0, 0);
    }

    private static void tensorParallel(String option, int value)
    {
        if (value < 0 || value > 8) {
            throw new IllegalArgumentException("--" + option + " must be in 1..8, got " + value);
        }
    }

    private static void positive(String option, int value)
    {
        if (value < 1) {
            throw new IllegalArgumentException("--" + option + " must be at least 1, got " + value);
        }
    }

    /**
     * Every override the servers and the colocated reference get: the demo's own {@code -D} ones, then
     * the transfer backend, and the model and attention backend when they were given.
     */
    public Map<String, String> effectiveOverrides()
    {
        Map<String, String> effective = new LinkedHashMap<>(overrides);
        effective.put(TRANSFER_BACKEND_KEY, transferBackend);
        model.ifPresent(name -> effective.put(MODEL_KEY, name));
        attention.ifPresent(id -> effective.put(ATTENTION_KEY, id));
        return effective;
    }

    /** {@code --config FILE} when one was given, then {@code -Dkey=value} for every effective override. */
    public List<String> configArguments()
    {
        List<String> arguments = new ArrayList<>();
        configFile.ifPresent(file -> {
            arguments.add("--config");
            arguments.add(file.toAbsolutePath().toString());
        });
        effectiveOverrides().forEach((key, value) -> arguments.add("-D" + key + "=" + value));
        return arguments;
    }

    /** Servers needed: one port each. */
    public int servers()
    {
        return prefills + decodes + (colocatedStandIns ? 0 : 1);
    }

    /** The servers on {@code ports} (one per {@link #servers()}, prefills first, the router last). */
    public Plan plan(List<Integer> ports)
    {
        if (ports.size() != servers()) {
            throw new IllegalArgumentException("need " + servers() + " ports, got " + ports.size());
        }
        List<NodeSpec> prefillNodes = new ArrayList<>();
        List<NodeSpec> decodeNodes = new ArrayList<>();
        for (int i = 0; i < prefills; i++) {
            prefillNodes.add(serve(name("prefill", i, prefills), NodeSpec.Role.PREFILL, ports.get(i)));
        }
        for (int i = 0; i < decodes; i++) {
            decodeNodes.add(serve(name("decode", i, decodes), NodeSpec.Role.DECODE, ports.get(prefills + i)));
        }
        List<NodeSpec> servers = new ArrayList<>(prefillNodes);
        servers.addAll(decodeNodes);
        if (colocatedStandIns) {
            return new Plan(List.of(servers), decodeNodes.getFirst().url());
        }
        List<String> router = new ArrayList<>(List.of("router"));
        prefillNodes.forEach(node -> router.addAll(List.of("--prefill", node.url().toString())));
        decodeNodes.forEach(node -> router.addAll(List.of("--decode", node.url().toString())));
        int routerPort = ports.getLast();
        router.addAll(List.of("--port", Integer.toString(routerPort)));
        router.addAll(configArguments());
        NodeSpec routerNode = new NodeSpec("router", NodeSpec.Role.ROUTER, routerPort, router);
        return new Plan(List.of(servers, List.of(routerNode)), routerNode.url());
    }

    private NodeSpec serve(String name, NodeSpec.Role role, int port)
    {
        String serveRole = colocatedStandIns ? "colocated" : role == NodeSpec.Role.PREFILL ? "prefill" : "decode";
        List<String> arguments = new ArrayList<>(List.of("serve", "--role", serveRole, "--host", "127.0.0.1", "--port", Integer.toString(port)));
        arguments.addAll(configArguments());
        int ranks = role == NodeSpec.Role.PREFILL ? prefillTensorParallel : decodeTensorParallel;
        if (ranks > 0) {
            // after the demo's own overrides: the layout of this side wins
            arguments.add("-D" + TENSOR_PARALLEL_KEY + "=" + ranks);
        }
        int dataRanks = role == NodeSpec.Role.PREFILL ? prefillDataParallel : decodeDataParallel;
        if (dataRanks > 0) {
            arguments.add("-D" + DATA_PARALLEL_KEY + "=" + dataRanks);
        }
        return new NodeSpec(name, role, port, arguments);
    }

    private static String name(String role, int index, int count)
    {
        return count == 1 ? role : role + "-" + index;
    }
}
