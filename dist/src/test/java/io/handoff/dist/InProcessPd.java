package io.handoff.dist;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPlan;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.GenerateResult;
import io.handoff.core.scheduler.RequestHandle;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.TokenListener;
import io.handoff.spi.transfer.RoomKey;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill and one or more decodes in this JVM, the prefill with a fault plan, sent requests the way the router
 * sends them. The prompt is 4 chunks of 64 tokens (4 pages each); with overlap on, the scheduler schedules chunk 1
 * while chunk 0's forward still runs, and early send posts chunk 0's pages right then.
 */
final class InProcessPd
        implements AutoCloseable
{
    static final int PAGES_PER_CHUNK = 4;
    static final int[] PROMPT = new SplittableRandom(42).ints(256, 0, 256).toArray();
    static final int NEW_TOKENS = 12;
    static final Duration PATIENCE = Duration.ofSeconds(60);

    final Engine prefillEngine;
    final ComputeEngine prefill;
    private final List<Engine> decodeEngines = new ArrayList<>();
    private final List<ComputeEngine> decodes = new ArrayList<>();

    /** One decode with the same settings as the prefill. */
    InProcessPd(Map<String, String> settings, FaultPlan faults, Disaggregation.Options options)
    {
        this(settings, List.of(Map.of()), faults, options);
    }

    /** One decode per entry of {@code decodeSettings}, each with the common settings plus its own. */
    InProcessPd(Map<String, String> settings, List<Map<String, String>> decodeSettings, FaultPlan faults, Disaggregation.Options options)
    {
        Map<String, String> all = common();
        all.putAll(settings);
        prefillEngine = Engine.start(new ConfigSource(Optional.empty(), all, Map.of()));
        prefill = ComputeEngine.create(prefillEngine, faults, Optional.of(Disaggregation.Role.PREFILL), options);
        for (Map<String, String> own : decodeSettings) {
            Map<String, String> decode = new HashMap<>(all);
            decode.putAll(own);
            Engine engine = Engine.start(new ConfigSource(Optional.empty(), decode, Map.of()));
            decodeEngines.add(engine);
            decodes.add(ComputeEngine.create(engine, FaultInjector.NONE, Optional.of(Disaggregation.Role.DECODE), options));
        }
    }

    Disaggregation prefillDisaggregation()
    {
        return prefill.disaggregation().orElseThrow();
    }

    /** Sends the prompt to the prefill and to the first decode as the router would; returns the decode's handle. */
    RequestHandle start(long roomId)
    {
        return start(roomId, 0);
    }

    RequestHandle start(long roomId, int decode)
    {
        startPrefill(roomId, PROMPT);
        return startDecode(roomId, decode, PROMPT, TokenListener.NONE);
    }

    /** A request sampled by {@code sampling}, stopping on EOS, sent to the prefill and the first decode; the decode's handle. */
    RequestHandle start(long roomId, SamplingParams sampling)
    {
        Optional<RoomTicket> prefillTicket = Optional.of(new RoomTicket(new RoomKey(roomId, 0), ""));
        prefill.scheduler().submit(request("r" + roomId, PROMPT, 1, sampling, false, prefillTicket), TokenListener.NONE);
        Optional<RoomTicket> decodeTicket = Optional.of(new RoomTicket(new RoomKey(roomId, 0), prefillDisaggregation().controlAddress().orElseThrow()));
        return decodes.getFirst().scheduler().submit(request("r" + roomId, PROMPT, NEW_TOKENS, sampling, false, decodeTicket), TokenListener.NONE);
    }

    /** The prefill's half of a request of {@code prompt}, as the router sends it. */
    RequestHandle startPrefill(long roomId, int[] prompt)
    {
        return prefill.scheduler().submit(request("r" + roomId, prompt, 1, Optional.of(new RoomTicket(new RoomKey(roomId, 0), ""))),
                TokenListener.NONE);
    }

    /** The decode's half of a request of {@code prompt}, as the router sends it; {@code listener} hears its tokens. */
    RequestHandle startDecode(long roomId, int decode, int[] prompt, TokenListener listener)
    {
        return startDecode(roomId, decode, prompt, listener, prefillDisaggregation().controlAddress().orElseThrow());
    }

    /** The decode's half of a request whose prefill is the one at {@code control}. */
    RequestHandle startDecode(long roomId, int decode, int[] prompt, TokenListener listener, String control)
    {
        return decodes.get(decode).scheduler().submit(request("r" + roomId, prompt, NEW_TOKENS,
                Optional.of(new RoomTicket(new RoomKey(roomId, 0), control))), listener);
    }

    /** The prefill's half of {@code request} (one new token, in room {@code roomId}), as the router sends it. */
    RequestHandle startPrefill(long roomId, GenerateRequest request)
    {
        return prefill.scheduler().submit(resized(request, 1).withTicket(new RoomTicket(new RoomKey(roomId, 0), "")), TokenListener.NONE);
    }

    /** The first decode's half of {@code request}, whose prefill is this one's; {@code listener} hears its tokens. */
    RequestHandle startDecode(long roomId, GenerateRequest request, TokenListener listener)
    {
        String control = prefillDisaggregation().controlAddress().orElseThrow();
        return decodes.getFirst().scheduler().submit(request.withTicket(new RoomTicket(new RoomKey(roomId, 0), control)), listener);
    }

    /** {@code request} on a colocated engine with the same settings. */
    static GenerateResult colocated(GenerateRequest request)
            throws Exception
    {
        try (Engine engine = Engine.start(new ConfigSource(Optional.empty(), common(), Map.of()));
                ComputeEngine compute = ComputeEngine.create(engine, FaultInjector.NONE)) {
            return await(compute.scheduler().submit(request, TokenListener.NONE));
        }
    }

    private static GenerateRequest resized(GenerateRequest request, int maxNewTokens)
    {
        return new GenerateRequest(request.rid(), request.promptIds(), maxNewTokens, request.sampling(), request.stopTokenIds(),
                request.ignoreEos(), request.returnLogits(), request.ticket(), request.logprobs());
    }

    /** The prefill's half of a request on another prefill, {@code other}. */
    static RequestHandle startPrefill(ComputeEngine other, long roomId, int[] prompt)
    {
        return other.scheduler().submit(request("r" + roomId, prompt, 1, Optional.of(new RoomTicket(new RoomKey(roomId, 0), ""))),
                TokenListener.NONE);
    }

    ComputeEngine decode(int decode)
    {
        return decodes.get(decode);
    }

    static GenerateResult await(RequestHandle handle)
            throws Exception
    {
        return handle.result().get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
    }

    /** Waits (bounded) for what another thread brings about; never to make something happen. */
    static void awaitTrue(String what, BooleanSupplier condition)
    {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            LockSupport.parkNanos(10_000_000);
        }
    }

    /** Waits (bounded) until the prefill posted a plan whose forward had not finished. */
    void awaitEarlyBytes()
    {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (prefillDisaggregation().stats().earlyBytes() == 0) {
            assertThat(System.nanoTime()).as("a plan posted while its forward was parked").isLessThan(deadline);
            LockSupport.parkNanos(10_000_000);
        }
    }

    static Map<String, String> common()
    {
        Map<String, String> settings = new HashMap<>();
        settings.put("handoff.scheduler.chunked-prefill-size", "64");
        settings.put("handoff.scheduler.overlap", "true");
        settings.put("handoff.kv.page-size", "16");
        settings.put("handoff.kv.pool-pages", "256");
        return settings;
    }

    /** The same prompt on a colocated engine: what every disaggregated run must reproduce to the bit. */
    static int[] colocated()
            throws Exception
    {
        return colocated(PROMPT);
    }

    /** {@code prompt} on a colocated engine. */
    static int[] colocated(int[] prompt)
            throws Exception
    {
        return colocated(request("reference", prompt, NEW_TOKENS, Optional.empty())).outputIds();
    }

    /** What {@link #start(long, SamplingParams)} must reproduce, on a colocated engine. */
    static int[] colocated(SamplingParams sampling)
            throws Exception
    {
        return colocated(request("reference", PROMPT, NEW_TOKENS, sampling, false, Optional.empty())).outputIds();
    }

    private static GenerateRequest request(String rid, int[] prompt, int maxNewTokens, Optional<RoomTicket> ticket)
    {
        return request(rid, prompt, maxNewTokens, SamplingParams.GREEDY, true, ticket);
    }

    private static GenerateRequest request(String rid, int[] prompt, int maxNewTokens, SamplingParams sampling, boolean ignoreEos,
            Optional<RoomTicket> ticket)
    {
        return new GenerateRequest(rid, prompt, maxNewTokens, sampling, Set.of(), ignoreEos, false, ticket);
    }

    @Override
    public void close()
    {
        decodes.forEach(ComputeEngine::close);
        prefill.close();
        decodeEngines.forEach(Engine::close);
        prefillEngine.close();
    }
}
