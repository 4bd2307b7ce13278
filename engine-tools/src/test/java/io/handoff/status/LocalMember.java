package io.handoff.status;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.runtime.ComputeEngine;
import io.handoff.core.runtime.Engine;
import io.handoff.http.ApiServer;
import io.handoff.http.base.ServerConfig;

import java.io.IOException;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A real server in this JVM on a free loopback port: the engine, its scheduler and KV pool, the HTTP API, and for a
 * prefill or decode the disaggregation layer with the mooncake backend; the same parts {@code handoff serve} puts
 * together, small (the tiny model, a 64-page pool).
 */
public final class LocalMember
        implements AutoCloseable
{
    public static final int POOL_PAGES = 64;

    private final Engine engine;
    private final ComputeEngine compute;
    private final ApiServer server;
    private final ServerConfig config;

    /** @param role empty: colocated */
    public LocalMember(Optional<Disaggregation.Role> role, Map<String, String> settings)
            throws IOException
    {
        Map<String, String> all = new HashMap<>();
        all.put("handoff.kv.page-size", "16");
        all.put("handoff.kv.pool-pages", Integer.toString(POOL_PAGES));
        all.put("handoff.server.host", "127.0.0.1");
        all.put("handoff.server.port", "0");
        all.putAll(settings);
        engine = Engine.start(new ConfigSource(Optional.empty(), all, Map.of()));
        try {
            config = ServerConfig.from(engine.config().config(), io.handoff.cli.ServerSettings.routerMac(engine.security()));
            compute = ComputeEngine.create(engine, FaultInjector.NONE, role);
            server = ApiServer.start(config, compute.scheduler(), compute.model(), compute.tokenizer(), compute.chatTemplate(), compute.disaggregation());
        }
        catch (RuntimeException | IOException e) {
            engine.close();
            throw e;
        }
    }

    public static LocalMember prefill()
            throws IOException
    {
        return new LocalMember(Optional.of(Disaggregation.Role.PREFILL), Map.of());
    }

    public static LocalMember decode()
            throws IOException
    {
        return new LocalMember(Optional.of(Disaggregation.Role.DECODE), Map.of());
    }

    public URI url()
    {
        return URI.create("http://127.0.0.1:" + server.address().getPort());
    }

    public String incarnation()
    {
        return compute.disaggregation().orElseThrow().incarnation();
    }

    @Override
    public void close()
    {
        try {
            server.shutdown(config.gracePeriod());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        finally {
            compute.close();
            engine.close();
        }
    }
}
