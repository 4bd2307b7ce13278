package io.handoff.chaos;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.demo.Cluster;
import io.handoff.demo.ColocatedReference;
import io.handoff.demo.DemoSettings;
import io.handoff.demo.FreePorts;
import io.handoff.demo.HealthProbe;
import io.handoff.demo.Node;
import io.handoff.demo.NodeLauncher;
import io.handoff.demo.NodeSpec;
import io.handoff.demo.RequestResult;
import io.handoff.demo.StartupFailure;
import io.handoff.demo.Workload;

import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * One run of {@code handoff chaos}: start the servers with the soak's fault rules, send the requests through the
 * router with their aborts (for a number of requests or a duration; killing and restarting a server once, or every
 * interval, when asked), sample every process's resources meanwhile, wait for the servers to go idle with every room
 * settled and read what they still hold, stop them, run every prompt that produced tokens on a colocated engine in this
 * process, and compare token by token.
 */
public final class ChaosRun
{
    private final ChaosSettings settings;
    private final ConfigSource source;
    private final NodeLauncher launcher;
    private final Consumer<String> progress;
    private final ChaosProgress.Factory bar;
    // the distinct questions of a timed soak, asked in turn
    private static final int TIMED_QUESTIONS = 400;
    private static final Duration FAILURE_PAUSE = Duration.ofMillis(100);

    /**
     * @param source the configuration of the colocated reference: the soak's, with the servers' overrides (no faults)
     * @param progress hears one line per step, for people (stderr)
     */
    public ChaosRun(ChaosSettings settings, ConfigSource source, NodeLauncher launcher, Consumer<String> progress, ChaosProgress.Factory bar)
    {
        this.settings = requireNonNull(settings, "settings is null");
        this.source = requireNonNull(source, "source is null");
        this.launcher = requireNonNull(launcher, "launcher is null");
        this.progress = requireNonNull(progress, "progress is null");
        this.bar = requireNonNull(bar, "bar is null");
    }

    public ChaosReport run()
            throws StartupFailure, InterruptedException
    {
        long wallStart = System.nanoTime();
        try (Engine engine = Engine.start(source);
                HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(2)).build()) {
            Workload workload = ChaosWorkload.of(settings.timed() ? TIMED_QUESTIONS : settings.requests(), settings.seed());
            DemoSettings demo = settings.demo();
            ChaosFaults faults = settings.faults();
            List<String> notes = new ArrayList<>();
            List<RequestOutcome> outcomes;
            double soakSeconds;
            List<NodeState> states;
            ServerSampler sampler;
            RouterRetries retries;
            Map<String, List<ResourceSample>> resources;
            List<ChaosKiller.Kill> kills = List.of();
            Started started = start(demo, faults, http);
            DemoSettings.Plan plan = started.plan();
            try (Cluster cluster = started.cluster()) {
                List<URI> servers = new ArrayList<>();
                List<String> names = new ArrayList<>();
                for (NodeSpec spec : plan.stages().getFirst()) {
                    servers.add(spec.url());
                    names.add(spec.name());
                }
                progress.accept("faults: prefill " + faults.prefillRules() + ", decode " + faults.decodeRules());
                try (ChaosClient client = new ChaosClient(plan.entry(), "chaos-" + Long.toHexString(System.currentTimeMillis()),
                        settings.maxNewTokens(), settings.requestDeadline())) {
                    RequestOutcome warmUp = client.run(-1, workload.warmUpPrompt(), AbortPlan.NONE);
                    if (warmUp.kind() != RequestOutcome.Kind.COMPLETED) {
                        notes.add("the warm-up request " + warmUp.kind().name().toLowerCase(java.util.Locale.ROOT) + ": " + warmUp.detail());
                    }
                    progress.accept("sending " + (settings.timed() ? "requests for " + settings.duration().get().toSeconds() + " s"
                            : settings.requests() + " requests") + " to " + plan.entry() + " (" + settings.concurrency() + " at a time, "
                            + settings.maxNewTokens() + " new tokens each, abort rate " + settings.abortRate() + ", fail rate " + settings.failRate()
                            + settings.killEvery().map(every -> ", a server killed every " + every.toSeconds() + " s").orElse("") + ")");
                    sampler = ServerSampler.start(http, names, servers);
                    long soakStart = System.nanoTime();
                    ResourceSampler resourceSampler = ResourceSampler.start(http, processes(plan));
                    Optional<ChaosKiller> killer = settings.killEvery().map(every -> new ChaosKiller(cluster, launcher, HealthProbe.http(http), every,
                            settings.startupTimeout(), settings.killRouter(), settings.seed(), progress, soakStart));
                    killer.ifPresent(ChaosKiller::start);
                    outcomes = sendAll(client, workload, cluster, plan, http, notes, killer, soakStart);
                    soakSeconds = (System.nanoTime() - soakStart) / 1e9;
                    if (killer.isPresent()) {
                        kills = killer.get().stop();
                        // the last kill's server may be back only now: give its recovery a request of its own
                        recoverLastKills(client, workload, killer.get(), kills);
                    }
                    progress.accept("waiting up to " + settings.settleTimeout().toSeconds() + " s for the servers to go idle, settle every room and "
                            + "give every page back");
                    states = sampler.settle(settings.settleTimeout());
                    resources = resourceSampler.stop();
                }
                retries = RouterRetries.read(http, plan.entry());
                notes.addAll(crashes(cluster));
                progress.accept("stopping the servers");
            }
            List<Integer> divergent = compare(engine, workload, outcomes, notes);
            return report(faults, outcomes, divergent, states, sampler, retries, soakSeconds, (System.nanoTime() - wallStart) / 1e9, resources,
                    kills, notes);
        }
    }

    /**
     * Starts the servers; when one finds its port taken (the ports were free a moment ago, but this machine is shared),
     * starts them again on other ports.
     */
    private Started start(DemoSettings demo, ChaosFaults faults, HttpClient http)
            throws StartupFailure, InterruptedException
    {
        return FreePorts.retrying(demo.servers(), progress, ports -> start(demo.plan(ports), faults, http));
    }

    private record Started(Cluster cluster, DemoSettings.Plan plan) {}

    private Started start(DemoSettings.Plan plan, ChaosFaults faults, HttpClient http)
            throws StartupFailure, InterruptedException
    {
        return new Started(Cluster.start(withFaults(plan.stages(), faults), launcher, HealthProbe.http(http), settings.startupTimeout(),
                settings.stopGrace(), progress), plan);
    }

    private List<List<NodeSpec>> withFaults(List<List<NodeSpec>> stages, ChaosFaults faults)
    {
        List<List<NodeSpec>> out = new ArrayList<>();
        for (List<NodeSpec> stage : stages) {
            List<NodeSpec> specs = new ArrayList<>();
            for (NodeSpec spec : stage) {
                List<String> rules = switch (spec.role()) {
                    case PREFILL -> faults.prefillRules();
                    case DECODE -> faults.decodeRules();
                    case ROUTER -> List.of();
                };
                List<String> arguments = new ArrayList<>(spec.arguments());
                arguments.addAll(ChaosFaults.argument(rules));
                specs.add(new NodeSpec(spec.name(), spec.role(), spec.port(), arguments));
            }
            out.add(specs);
        }
        return out;
    }

    /** Every process of the cluster by name (the router too), for the resource samples. */
    private static Map<String, URI> processes(DemoSettings.Plan plan)
    {
        Map<String, URI> processes = new LinkedHashMap<>();
        for (List<NodeSpec> stage : plan.stages()) {
            for (NodeSpec spec : stage) {
                processes.put(spec.name(), spec.url());
            }
        }
        return processes;
    }

    /**
     * Kills whose recovery no request showed yet (the last one may have come back as the traffic ended): each gets
     * requests of its own, a few seconds apart, until one completes or the startup timeout has passed.
     */
    private void recoverLastKills(ChaosClient client, Workload workload, ChaosKiller killer, List<ChaosKiller.Kill> kills)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + settings.startupTimeout().toNanos();
        int index = Integer.MAX_VALUE / 2;
        while (kills.stream().anyMatch(kill -> kill.recoveredSeconds < 0 && kill.failure == null) && System.nanoTime() - deadline < 0) {
            long started = System.nanoTime();
            RequestOutcome probe = client.run(index, workload.prompt(index++ % workload.size()), AbortPlan.NONE);
            if (probe.kind() == RequestOutcome.Kind.COMPLETED) {
                killer.completed(started, System.nanoTime());
            }
            else {
                // the server is still starting: ask again shortly, bounded by the deadline
                Thread.sleep(500);
            }
        }
    }

    private List<RequestOutcome> sendAll(ChaosClient client, Workload workload, Cluster cluster, DemoSettings.Plan plan, HttpClient http, List<String> notes,
            Optional<ChaosKiller> killer, long soakStart)
            throws InterruptedException
    {
        int total = settings.timed() ? Integer.MAX_VALUE : settings.requests();
        long end = settings.duration().map(duration -> soakStart + duration.toNanos()).orElse(Long.MAX_VALUE);
        List<RequestOutcome> outcomes = java.util.Collections.synchronizedList(new ArrayList<>());
        ChaosProgress display = bar.create(settings.timed() ? 0 : total);
        AtomicInteger next = new AtomicInteger();
        AtomicInteger ended = new AtomicInteger();
        AtomicBoolean restarted = new AtomicBoolean(settings.killRestart() == ChaosSettings.KillRestart.NONE);
        List<Thread> workers = new ArrayList<>();
        List<Thread> restarts = new ArrayList<>();
        for (int w = 0; w < Math.min(settings.concurrency(), total); w++) {
            workers.add(Thread.ofVirtual().name("chaos-client-" + w).start(() -> {
                for (int index = next.getAndIncrement(); index < total && System.nanoTime() - end < 0; index = next.getAndIncrement()) {
                    AbortPlan abort = AbortPlan.draw(settings.seed(), index, settings.abortRate(), settings.maxNewTokens());
                    long started = System.nanoTime();
                    RequestOutcome outcome = client.run(index, workload.prompt(index % workload.size()), abort);
                    if (outcome.kind() == RequestOutcome.Kind.COMPLETED) {
                        killer.ifPresent(k -> k.completed(started, System.nanoTime()));
                    }
                    outcomes.add(outcome);
                    display.ended(outcome);
                    if (outcome.kind() == RequestOutcome.Kind.FAILED && System.nanoTime() - started < FAILURE_PAUSE.toNanos()) {
                        // refused at once (a server is down): a client pauses before it asks again, rather than spin
                        pause(FAILURE_PAUSE);
                    }
                    if (ended.incrementAndGet() >= total / 3 && restarted.compareAndSet(false, true)) {
                        synchronized (restarts) {
                            restarts.add(Thread.ofVirtual().name("chaos-kill-restart").start(() -> killRestart(cluster, plan, http, notes)));
                        }
                    }
                }
            }));
        }
        for (Thread worker : workers) {
            worker.join();
        }
        synchronized (restarts) {
            for (Thread restart : restarts) {
                restart.join();
            }
        }
        List<RequestOutcome> sorted = new ArrayList<>(outcomes);
        sorted.sort(java.util.Comparator.comparingInt(RequestOutcome::index));
        return List.copyOf(sorted);
    }

    private static void pause(Duration pause)
    {
        try {
            Thread.sleep(pause);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void killRestart(Cluster cluster, DemoSettings.Plan plan, HttpClient http, List<String> notes)
    {
        NodeSpec.Role role = settings.killRestart() == ChaosSettings.KillRestart.PREFILL ? NodeSpec.Role.PREFILL : NodeSpec.Role.DECODE;
        List<Node> candidates = cluster.nodes(role);
        if (candidates.isEmpty()) {
            synchronized (notes) {
                notes.add("no " + role.name().toLowerCase(java.util.Locale.ROOT) + " to kill");
            }
            return;
        }
        Node victim = candidates.getFirst();
        NodeSpec spec = victim.spec();
        NodeSpec again = new NodeSpec(spec.name() + "-restarted", spec.role(), spec.port(), spec.arguments());
        try {
            cluster.restart(victim, again, launcher, HealthProbe.http(http), settings.startupTimeout(), progress);
            synchronized (notes) {
                notes.add("killed " + spec.name() + " (SIGKILL) after a third of the requests and started it again on " + spec.url());
            }
        }
        catch (StartupFailure e) {
            synchronized (notes) {
                notes.add("the restarted " + spec.name() + " did not come back: " + e.getMessage());
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static List<String> crashes(Cluster cluster)
    {
        List<String> notes = new ArrayList<>();
        for (Node node : cluster.nodes()) {
            node.ended().ifPresent(how -> notes.add(node.spec().name() + " " + how + " during the run (log: " + node.logLocation() + ")"));
        }
        return notes;
    }

    /** The indices of requests whose tokens differ from the colocated reference's. */
    private List<Integer> compare(Engine engine, Workload workload, List<RequestOutcome> outcomes, List<String> notes)
            throws InterruptedException
    {
        // greedy decoding: one reference per distinct prompt serves every request that asked it
        List<RequestOutcome> checked = new ArrayList<>();
        List<String> prompts = new ArrayList<>();
        Map<String, Integer> referenceOf = new LinkedHashMap<>();
        for (RequestOutcome outcome : outcomes) {
            if (outcome.outputIds().length > 0) {
                checked.add(outcome);
                String prompt = workload.prompt(outcome.index() % workload.size());
                if (!referenceOf.containsKey(prompt)) {
                    referenceOf.put(prompt, prompts.size());
                    prompts.add(prompt);
                }
            }
        }
        progress.accept("running the " + prompts.size() + " requests that produced tokens on a colocated engine in this process");
        List<RequestResult> reference;
        try (ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            reference = new ColocatedReference(compute.scheduler(), compute.tokenizer()).run(prompts, settings.maxNewTokens(), settings.concurrency());
        }
        List<Integer> divergent = new ArrayList<>();
        for (RequestOutcome outcome : checked) {
            RequestResult expected = reference.get(referenceOf.get(workload.prompt(outcome.index() % workload.size())));
            if (!expected.completed()) {
                notes.add("the colocated reference failed request " + outcome.index() + ": " + expected.error().orElseThrow());
                divergent.add(outcome.index());
            }
            else if (!ChaosReport.matches(outcome, expected.outputIds())) {
                divergent.add(outcome.index());
            }
        }
        return divergent;
    }

    private ChaosReport report(ChaosFaults faults, List<RequestOutcome> outcomes, List<Integer> divergent, List<NodeState> states,
            ServerSampler sampler, RouterRetries retries, double soakSeconds, double wallSeconds, Map<String, List<ResourceSample>> resources,
            List<ChaosKiller.Kill> kills, List<String> notes)
    {
        Map<String, Object> setup = new LinkedHashMap<>();
        setup.put("transfer_backend", settings.transferBackend());
        setup.put("overrides", settings.overrides());
        setup.put("prefills", settings.prefills());
        setup.put("concurrency", settings.concurrency());
        setup.put("max_new_tokens", settings.maxNewTokens());
        setup.put("abort_rate", settings.abortRate());
        setup.put("fail_rate", settings.failRate());
        setup.put("seed", settings.seed());
        setup.put("kill_restart", settings.killRestart().label());
        settings.duration().ifPresent(duration -> setup.put("duration_s", duration.toSeconds()));
        settings.killEvery().ifPresent(every -> setup.put("kill_every_s", every.toSeconds()));
        setup.put("kill_router", settings.killRouter());
        setup.put("prefill_faults", faults.prefillRules());
        setup.put("decode_faults", faults.decodeRules());
        Map<String, OptionalInt> leaked = new LinkedHashMap<>();
        Map<String, OptionalInt> held = new LinkedHashMap<>();
        Map<String, OptionalInt> unsettled = new LinkedHashMap<>();
        int quarantined = 0;
        boolean quarantineKnown = !states.isEmpty();
        for (NodeState state : states) {
            leaked.put(state.name(), state.leakedPages());
            held.put(state.name(), state.reachable() ? state.quarantined() : OptionalInt.empty());
            unsettled.put(state.name(), state.reachable() ? state.unsettledRooms() : OptionalInt.empty());
            if (!state.reachable() || !state.idle()) {
                notes.add(state.name() + (state.reachable() ? " was still busy" : " could not be read") + " after " + settings.settleTimeout().toSeconds()
                        + " s: its pages cannot be counted");
            }
            if (state.quarantined().isPresent()) {
                quarantined += state.quarantined().getAsInt();
            }
            else {
                quarantineKnown = false;
            }
        }
        OptionalDouble maxQuarantine = sampler.longestQuarantineSeconds();
        for (ChaosKiller.Kill kill : kills) {
            if (kill.failure != null) {
                notes.add(kill.failure);
            }
        }
        // a killing soak restarts processes: their samples start afresh, so growth is judged on soaks without kills
        List<String> growth = kills.isEmpty() && settings.killRestart() == ChaosSettings.KillRestart.NONE ? ResourceGrowth.findings(resources) : List.of();
        return new ChaosReport(setup, outcomes, divergent, leaked, held, unsettled, quarantineKnown ? OptionalInt.of(quarantined) : OptionalInt.empty(),
                maxQuarantine.isPresent() ? OptionalDouble.of(maxQuarantine.getAsDouble() * 1000) : OptionalDouble.empty(),
                sampler.quarantineDurations(), retries.byCause(), retries.known(), soakSeconds, wallSeconds, resources, growth, kills, notes);
    }
}
