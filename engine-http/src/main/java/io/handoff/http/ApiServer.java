package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.sun.net.httpserver.HttpServer;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.parallel.RankGroup;
import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationGroup;
import io.handoff.core.output.GenerationParams;
import io.handoff.core.output.LogprobTrace;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.runtime.ChatTemplateText;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.http.base.AbortRequest;
import io.handoff.http.base.AccessNotice;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.HttpRoutes;
import io.handoff.http.base.HttpRoutes.Route;
import io.handoff.http.base.JdkHttpServerLimits;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.OutputCount;
import io.handoff.http.base.PrometheusText;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.RouterAuthentication;
import io.handoff.http.base.security.RouterSignature;
import io.handoff.http.base.TimelineEndpoint;
import io.handoff.http.chat.ChatCompletionsApi;
import io.handoff.http.chat.ChatModel;
import io.handoff.http.chat.ChatTemplate;
import io.handoff.http.fields.TokenTexts;
import io.handoff.trace.FinishReason;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static java.util.Objects.requireNonNull;

/**
 * The colocated HTTP API over one scheduler: SGLang's {@code /generate}, OpenAI's {@code /v1/completions},
 * {@code /v1/chat/completions}, {@code /v1/responses} and {@code /v1/models}, {@code /abort_request}, {@code /health},
 * {@code /health_generate}, Prometheus {@code /metrics}, and SGLang's admin endpoints ({@code /get_model_info},
 * {@code /get_server_info}, {@code /flush_cache}, {@code /tokenize}, {@code /detokenize}, {@code /version}).
 *
 * <p>The JDK's HTTP server runs each exchange on its own virtual thread, so a streaming response may
 * simply block waiting for the next token; memory stays bounded because the scheduler's waiting queue is
 * (a full queue is HTTP 503 with {@code Retry-After}) and so is every request body.
 */
public final class ApiServer
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ApiServer.class);

    private final ServerConfig config;
    private final Scheduler scheduler;
    private final ModelConfig model;
    private final Tokenizer tokenizer;
    private final ServerMetrics metrics = new ServerMetrics();
    private final Generations generations;
    private final Optional<Disaggregation> disaggregation;
    private final Optional<RankGroup> ranks;
    private final Bootstrap bootstrap;
    private final Map<String, Route> routes;
    private final long created = System.currentTimeMillis() / 1000;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpServer server;
    private boolean stopped;
    // what POST /admin/role drives (handoff serve sets it), and the role a switch under way goes to
    private volatile RoleSwitcher roleSwitcher;
    private volatile String switchingTo;

    private ApiServer(ServerConfig config, Scheduler scheduler, ModelConfig model, Tokenizer tokenizer, Optional<ChatTemplateText> chatTemplate,
            Optional<Disaggregation> disaggregation, Optional<RankGroup> ranks)
            throws IOException
    {
        this.ranks = requireNonNull(ranks, "ranks is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.disaggregation = requireNonNull(disaggregation, "disaggregation is null");
        this.config = requireNonNull(config, "config is null");
        this.bootstrap = new Bootstrap(disaggregation.map(Disaggregation::role), config.access().routerAuthentication());
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
        this.model = requireNonNull(model, "model is null");
        this.generations = new Generations(scheduler, model, tokenizer, metrics, config.retryAfter(), config.limits().maxPromptTokens());
        GenerateApi generate = new GenerateApi(generations, model, tokenizer, bootstrap);
        CompletionsApi completions = new CompletionsApi(generations, model, tokenizer, InstantSource.system(), bootstrap);
        ChatModel chat = chatModel(generations, model, tokenizer, chatTemplate, bootstrap);
        this.routes = HttpRoutes.union(HttpRoutes.union(new TimelineEndpoint(scheduler.timelines(), bootstrap.roleName()).routes(), Map.of(
                "/generate", new Route("POST", generate::handle),
                "/v1/completions", new Route("POST", completions::handle),
                "/v1/chat/completions", new Route("POST", new ChatCompletionsApi(chat, InstantSource.system())::handle),
                "/abort_request", new Route("POST", exchange -> AbortRequest.handle(exchange, generations::abort, "")),
                // open: load balancers and the router probe it without a key; it tells nothing but "ok" or "shutting down"
                "/health", new Route("GET", this::health, HttpRoutes.Access.OPEN),
                "/health_generate", new Route("GET", this::healthGenerate),
                "/metrics", new Route("GET", this::metrics),
                "/bootstrap", new Route("GET", this::bootstrap),
                "/admin/role", new Route("POST", this::adminRole))), adminRoutes(chat, tokenizer, disaggregation));
        JdkHttpServerLimits.apply(config.limits());
        this.server = HttpServer.create(new InetSocketAddress(config.host(), config.port()), 0);
        server.setExecutor(executor);
        server.createContext("/", new HttpRoutes(routes, config, metrics.httpRequests())::dispatch);
        AccessNotice.log(config, disaggregation.isPresent());
    }

    /** Binds {@code config.host():config.port()} and starts answering. */
    public static ApiServer start(ServerConfig config, Scheduler scheduler, ModelConfig model)
            throws IOException
    {
        return start(config, scheduler, model, Optional.empty());
    }

    /** A server for a prefill or decode of a disaggregated deployment (colocated when {@code disaggregation} is empty). */
    public static ApiServer start(ServerConfig config, Scheduler scheduler, ModelConfig model, Optional<Disaggregation> disaggregation)
            throws IOException
    {
        return start(config, scheduler, model, new ByteTokenizer(), disaggregation);
    }

    /** A server whose prompts and outputs go through the model's {@code tokenizer}. */
    public static ApiServer start(ServerConfig config, Scheduler scheduler, ModelConfig model, Tokenizer tokenizer,
            Optional<Disaggregation> disaggregation)
            throws IOException
    {
        return start(config, scheduler, model, tokenizer, Optional.empty(), disaggregation);
    }

    /** A server that also renders the model's own {@code chatTemplate} for {@code /v1/chat/completions}. */
    public static ApiServer start(ServerConfig config, Scheduler scheduler, ModelConfig model, Tokenizer tokenizer,
            Optional<ChatTemplateText> chatTemplate, Optional<Disaggregation> disaggregation)
            throws IOException
    {
        return start(config, scheduler, model, tokenizer, chatTemplate, disaggregation, Optional.empty());
    }

    /** A server whose steps run on a tensor-parallel group ({@code ranks}): {@code /health} lists its ranks. */
    public static ApiServer start(ServerConfig config, Scheduler scheduler, ModelConfig model, Tokenizer tokenizer,
            Optional<ChatTemplateText> chatTemplate, Optional<Disaggregation> disaggregation, Optional<RankGroup> ranks)
            throws IOException
    {
        ApiServer server = new ApiServer(config, scheduler, model, tokenizer, chatTemplate, disaggregation, ranks);
        server.server.start();
        return server;
    }

    /** Where it listens (with the actual port when the configured one was 0). */
    public InetSocketAddress address()
    {
        return server.getAddress();
    }

    /** Generation requests in flight. */
    public int inFlight()
    {
        return generations.inFlight();
    }

    /** SGLang's admin endpoints, the model's description, tokenization and {@code /v1/responses}. */
    private Map<String, Route> adminRoutes(ChatModel chat, Tokenizer tokenizer, Optional<Disaggregation> disaggregation)
    {
        ServerInfo serverInfo = new ServerInfo(config, this::address, scheduler, model, disaggregation, bootstrap.roleName());
        return HttpRoutes.union(HttpRoutes.union(new ModelEndpoints(model, tokenizer, created).routes(), new TokenizeEndpoints(model, tokenizer).routes()),
                Map.of(
                        "/v1/responses", new Route("POST", new ResponsesApi(chat, created)::handle),
                        "/get_server_info", new Route("GET", serverInfo::handle),
                        "/flush_cache", new Route("GET, POST", new FlushCache(scheduler)::handle)));
    }

    /** Lets {@code POST /admin/role} switch this server's role through {@code switcher}. */
    public void roleSwitcher(RoleSwitcher switcher)
    {
        this.roleSwitcher = requireNonNull(switcher, "switcher is null");
    }

    /**
     * A role switch to {@code role}: stops admitting (new requests get 503 {@code draining}, which a router retries
     * elsewhere) and waits, until {@code deadlineNanos}, for every request in flight to finish and every room to settle
     * with no page held without proof (invariant I2). True when all did: the engine may close. False otherwise, and the
     * server admits again ({@link #resumeAfterSwitch}) when the caller gives up.
     */
    public boolean pauseForSwitch(String role, long deadlineNanos)
            throws InterruptedException
    {
        switchingTo = requireNonNull(role, "role is null");
        if (!generations.pause("the server is switching its role to " + role, deadlineNanos)) {
            return false;
        }
        if (disaggregation.isEmpty()) {
            return true;
        }
        int unsettled = disaggregation.get().awaitSettled(deadlineNanos);
        return unsettled == 0 && scheduler.stats().pages().quarantined() == 0;
    }

    /** Admits again after a {@link #pauseForSwitch} that did not end in a switch. */
    public void resumeAfterSwitch()
    {
        switchingTo = null;
        generations.resume();
    }

    /** {@code POST /admin/role {"role": "prefill" | "decode" | "colocated"}}: starts a role switch ({@link RoleSwitcher}). */
    private void adminRole(Exchange exchange)
            throws IOException
    {
        // API keys, when configured, were checked on the way in; with a cluster secret and no keys only the router (its planner) may
        RouterAuthentication router = config.access().routerAuthentication();
        if (!config.access().apiKeys().required() && !router.insecure()) {
            router.refusal(exchange.method(), exchange.path(), exchange.body(), exchange.header(RouterSignature.HEADER))
                    .ifPresent(why -> {
                        throw ApiError.forbidden("router_authentication_failed", "role", "switching a server's role takes an API key "
                                + "(handoff.server.api-keys) or the router's signature with the cluster secret: " + why);
                    });
        }
        JsonFields body = exchange.json();
        body.allowOnly(java.util.Set.of("role"));
        String role = body.string("role").orElseThrow(() -> ApiError.invalid("missing_field", "role", "'role' is required: one of "
                + String.join(", ", RoleSwitcher.ROLES)));
        if (!RoleSwitcher.ROLES.contains(role)) {
            throw ApiError.invalid("invalid_value", "role", "role '" + role + "' is not one of " + String.join(", ", RoleSwitcher.ROLES));
        }
        RoleSwitcher switcher = roleSwitcher;
        if (switcher == null) {
            throw ApiError.conflict("role_switch_unavailable", "role", "this server cannot switch roles (only one started by handoff serve can)");
        }
        RoleSwitcher.Answer answer = switcher.switchTo(role);
        ObjectNode node = JsonFields.MAPPER.createObjectNode();
        node.put("role", bootstrap.roleName());
        node.put("requested", role);
        node.put("status", answer.state());
        node.put("message", answer.message());
        exchange.sendJson(answer.status(), node);
    }

    private void health(Exchange exchange)
            throws IOException
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        String switching = switchingTo;
        body.put("status", switching != null ? "switching" : generations.draining() ? "shutting_down" : "ok");
        body.put("role", bootstrap.roleName());
        if (switching != null) {
            body.put("switching_to", switching);
        }
        // what a router's SLO planner weighs: queues, and the last 30 s of latencies
        ObjectNode load = body.putObject("load");
        load.put("waiting", scheduler.stats().waiting());
        load.put("running", scheduler.stats().running());
        metrics.recentFirstTokenP90().ifPresent(value -> load.put("ttft_p90_seconds", value));
        metrics.recentInterTokenP90().ifPresent(value -> load.put("itl_p90_seconds", value));
        if (disaggregation.isPresent()) {
            // rooms not final yet, and KV pages that wait for proof that no peer write can land (invariant I2)
            body.put("unsettled_rooms", disaggregation.get().unsettledRooms());
            body.put("held_without_proof", scheduler.stats().pages().quarantined());
            // a decode's prefills that neither drained nor exited within its drain deadline: routers stop pairing them
            disaggregation.get().suspectPeers().forEach(body.putArray("suspect_peers")::add);
            // replaced prefills whose quarantined pages no proof released: they stay quarantined (invariant I2)
            List<String> unproven = disaggregation.get().unprovenRestarts();
            if (!unproven.isEmpty()) {
                unproven.forEach(body.putArray("unproven_restarts")::add);
            }
        }
        // a tensor-parallel server is only as healthy as its every rank: a lost one fails every step until a restart
        Optional<String> lostRank = ranks.flatMap(RankGroup::failure);
        ranks.ifPresent(group -> {
            ArrayNode list = body.putArray("ranks");
            for (RankGroup.RankStatus rank : group.ranks()) {
                ObjectNode node = list.addObject();
                node.put("rank", rank.rank()).put("pid", rank.pid()).put("host", rank.host()).put("healthy", rank.healthy());
                if (!rank.problem().isEmpty()) {
                    node.put("error", rank.problem());
                }
            }
        });
        if (lostRank.isPresent() && !generations.draining()) {
            body.put("status", "unhealthy");
            body.put("error", lostRank.get() + "; restart the server");
        }
        // while it shuts down a router must stop sending here; the body says what the shutdown still waits for
        exchange.sendJson(generations.draining() || lostRank.isPresent() ? 503 : 200, body);
    }

    /** Runs a one-token generation through the whole path; 503 if it does not finish within the configured timeout. */
    private void healthGenerate(Exchange exchange)
            throws IOException, InterruptedException
    {
        // the prompt a model starts every request with (its BOS); token 0 for a model that has none
        int[] prompt = tokenizer.encodePrompt("");
        GenerationParams params = new GenerationParams("health-" + generations.newRid(), prompt.length > 0 ? prompt : new int[] {0}, 1,
                SamplingOptions.HEALTH, Optional.empty(), Optional.empty());
        try (Generation generation = generations.start(params)) {
            Optional<Generation.Outcome> outcome = generation.run(Generation.Sink.NONE, config.healthGenerateTimeout());
            if (outcome.isEmpty()) {
                throw ApiError.unavailable("unhealthy", "a one-token generation did not finish within " + config.healthGenerateTimeout().toMillis() + " ms");
            }
            if (outcome.get().reason() != FinishReason.LENGTH || outcome.get().outputIds().length != 1) {
                throw ApiError.unavailable("unhealthy", "a one-token generation ended with " + outcome.get().reason()
                        + outcome.get().error().map(error -> ": " + error).orElse(""));
            }
            ObjectNode body = JsonFields.MAPPER.createObjectNode();
            body.put("status", "ok");
            body.put("output_id", outcome.get().outputIds()[0]);
            body.put("latency_seconds", outcome.get().totalNanos() / 1e9);
            exchange.sendJson(200, body);
        }
    }

    private void metrics(Exchange exchange)
            throws IOException
    {
        String text = metrics.render(scheduler.stats(), generations.inFlight());
        if (disaggregation.isPresent()) {
            text += DisaggregationMetrics.render(disaggregation.get());
        }
        exchange.sendText(200, PrometheusText.CONTENT_TYPE, text);
    }

    /** What a router (or an operator) needs to pair this server: its role, model, compatibility, KV shape and transfer setup. */
    private void bootstrap(Exchange exchange)
            throws IOException
    {
        ObjectNode node = JsonFields.MAPPER.createObjectNode();
        node.put("role", bootstrap.roleName());
        node.put("model", model.name());
        node.put("compatibility", model.compatibilityHash());
        int dataParallel = scheduler.dataParallel();
        KvShapeJson.put(node, model.attentionGeometry(), scheduler.kvGeometry(), dataParallel > 1 ? 1 : ranks.map(group -> group.ranks().size()).orElse(1),
                dataParallel);
        disaggregation.ifPresent(d -> {
            node.put("incarnation", d.incarnation());
            d.controlAddress().ifPresent(address -> node.put("control", address));
            node.put("transfer_backend", d.backendId());
            ArrayNode capabilities = node.putArray("capabilities");
            d.capabilities().stream().map(Enum::name).sorted().forEach(capabilities::add);
            ObjectNode earlySend = node.putObject("early_send");
            earlySend.put("requested", d.earlySend().requested());
            earlySend.put("enabled", d.earlySend().enabled());
            earlySend.put("reason", d.earlySend().reason());
            node.put("transport", d.transport());
        });
        exchange.sendJson(200, node);
    }

    /**
     * Graceful shutdown within {@code grace}: stops admitting (new requests get 503), lets in-flight
     * requests finish during the first three quarters, aborts the rest, then stops the HTTP server. The
     * scheduler is the caller's to close.
     */
    public void shutdown(Duration grace)
            throws InterruptedException
    {
        synchronized (this) {
            if (stopped) {
                return;
            }
            stopped = true;
        }
        long start = System.nanoTime();
        long finishBy = start + grace.toNanos() * 3 / 4;
        long abortBy = start + grace.toNanos() * 9 / 10;
        int aborted = generations.drain(finishBy, abortBy);
        if (disaggregation.isPresent()) {
            // the links stay up meanwhile: drain acks arrive and lost peers are fenced; /health says what is left
            int unsettled = disaggregation.get().awaitSettled(start + grace.toNanos());
            int held = scheduler.stats().pages().quarantined();
            if (unsettled > 0 || held > 0) {
                log.warn("shutting down with {} room(s) not settled within the grace period: {} KV page(s) are held without proof that no "
                        + "write of a peer can land (they stay quarantined until this process exits)", unsettled, held);
            }
            else {
                log.info("every room settled");
            }
        }
        // Every exchange that held a generation has answered; the rest are short (health, metrics).
        server.stop(0);
        executor.shutdownNow();
        log.info("HTTP server stopped after {} ms ({} in-flight request(s) aborted)", (System.nanoTime() - start) / 1_000_000, aborted);
    }

    @Override
    public void close()
    {
        try {
            shutdown(config.gracePeriod());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The served model for {@code /v1/chat/completions}: prompts rendered with the model's own chat template (none: chat
     * is refused with a 400) and encoded with its tokenizer, without adding a BOS (the template writes it).
     */
    private static ChatModel chatModel(Generations generations, ModelConfig model, Tokenizer tokenizer, Optional<ChatTemplateText> chatTemplate,
            Bootstrap bootstrap)
    {
        Optional<ChatTemplate> template = chatTemplate.map(text -> ChatTemplate.parse(text.template(), text.bosToken(), text.eosToken()));
        TokenTexts texts = TokenTexts.of(tokenizer);
        return new ChatModel()
        {
            @Override public String id() { return model.name(); }
            @Override public Optional<ChatTemplate> template() { return template; }
            @Override public int maxContext() { return model.maxContext(); }
            @Override public int[] encode(String prompt) { return tokenizer.encode(prompt, false); }
            @Override public int vocabSize() { return model.vocabSize(); }
            @Override public TokenTexts tokenTexts() { return texts; }
            @Override public java.util.OptionalInt specialTokenId(String text) { return tokenizer.specialTokenId(text); }
            @Override public Optional<RoomTicket> ticket(JsonFields body, Exchange exchange) { return bootstrap.ticket(body, exchange); }

            @Override
            public Result generate(Request request, TextSink sink)
                    throws InterruptedException
            {
                generations.checkContext(request.promptIds().length, "messages", request.maxTokens(), "max_completion_tokens");
                GenerationParams params = new GenerationParams(request.rid(), request.promptIds(), bootstrap.maxNewTokens(request.maxTokens()),
                        request.sampling(), request.logprobs(), request.ticket());
                OutputCount count = new OutputCount(1, false, request.n(), request.n());
                OutputRids rids = OutputRids.of(Optional.of(TextNode.valueOf(request.rid())), count, generations::newRid);
                try (GenerationGroup group = generations.startGroup(bootstrap, List.of(params), count, rids)) {
                    GenerationGroup.Result result = group.run((index, g) -> sink.onText(index, g.stableText(), g.outputIds(),
                            g.logprobsSoFar().map(LogprobTrace::output).orElse(List.of())));
                    List<Outcome> outcomes = result.outcomes().stream()
                            .map(outcome -> new Outcome(outcome.text(), outcome.reason().name().toLowerCase(java.util.Locale.ROOT),
                                    outcome.promptTokens(), outcome.outputIds(), outcome.error(), outcome.clientGone(),
                                    outcome.logprobs().map(LogprobTrace::output).orElse(List.of())))
                            .toList();
                    return new Result(outcomes, result.failure().map(Generations::failure), result.clientGone());
                }
            }
        };
    }
}
