package io.handoff.core.cli;

import io.handoff.core.http.ServerConfig;
import io.handoff.core.router.Router;
import io.handoff.core.router.RouterConfig;
import io.handoff.core.runtime.Engine;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

@Command(name = "router", mixinStandardHelpOptions = true,
        description = {"Serve one HTTP API in front of prefill and decode servers (handoff serve --role prefill / --role decode) until SIGTERM or Ctrl-C.",
                "Each request goes to a healthy prefill (round-robin) and the least-loaded healthy decode with one rid and KV-transfer room;"
                        + " the client gets the decode's response. GET /backends lists the servers and their health."})
final class RouterCommand
        implements Callable<Integer>
{
    private static final Logger log = LogManager.getLogger(RouterCommand.class);

    @Mixin
    EngineOptions options;

    @Option(names = "--prefill", paramLabel = "URL", description = "A prefill server, e.g. http://10.0.0.5:30000 (HOST:PORT means http://HOST:PORT). Repeatable; at least one.")
    List<String> prefills = new ArrayList<>();

    @Option(names = "--decode", paramLabel = "URL", description = "A decode server, e.g. http://10.0.0.6:30000. Repeatable; at least one.")
    List<String> decodes = new ArrayList<>();

    @Option(names = "--host", paramLabel = "HOST", description = "Address to listen on; sets handoff.server.host (default 127.0.0.1).")
    String host;

    @Option(names = "--port", paramLabel = "PORT", description = "Port to listen on, 0 for any free one; sets handoff.server.port (default 30000).")
    Integer port;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        Set<URI> seen = new HashSet<>();
        List<URI> prefillUrls = urls("--prefill", prefills, seen);
        List<URI> decodeUrls = urls("--decode", decodes, seen);
        if (port != null && (port < 0 || port > 65535)) {
            throw new ParameterException(spec.commandLine(), "--port must be in 0..65535, got " + port);
        }
        if (host != null) {
            options.overrides.put("handoff.server.host", host);
        }
        if (port != null) {
            options.overrides.put("handoff.server.port", Integer.toString(port));
        }
        ServerConfig serverConfig;
        RouterConfig routerConfig;
        // The engine validates the configuration (with plugins' keys) and sets up logging; the router needs nothing else of it.
        try (Engine engine = Engine.start(options.source())) {
            serverConfig = ServerConfig.from(engine.config().config());
            routerConfig = RouterConfig.from(engine.config().config());
        }
        Router router;
        try {
            router = Router.start(serverConfig, routerConfig, prefillUrls, decodeUrls);
        }
        catch (BindException e) {
            throw new UncheckedIOException("cannot listen on " + serverConfig.host() + ":" + serverConfig.port() + " (" + e.getMessage()
                    + "); choose another address with --host/--port or handoff.server.*", e);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("handoff-shutdown").unstarted(() -> {
            log.info("shutting down: no new requests; in-flight ones have {} ms to finish", serverConfig.gracePeriod().toMillis());
            try {
                router.shutdown(serverConfig.gracePeriod());
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            finally {
                stopped.countDown();
            }
        }));
        log.info("routing on http://{}:{} to prefill {} and decode {}", router.address().getHostString(), router.address().getPort(), prefillUrls, decodeUrls);
        stopped.await();
        return Main.OK;
    }

    private List<URI> urls(String option, List<String> given, Set<URI> seen)
    {
        if (given.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "at least one " + option + " URL is required"
                    + " (a server started with handoff serve --role " + option.substring(2) + ")");
        }
        List<URI> urls = new ArrayList<>();
        for (String text : given) {
            URI url;
            try {
                url = Router.backendUrl(text);
            }
            catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), option + ": " + e.getMessage());
            }
            if (!seen.add(url)) {
                throw new ParameterException(spec.commandLine(), option + ": " + url + " is given more than once; each server is one --prefill or one --decode");
            }
            urls.add(url);
        }
        return urls;
    }
}
