package io.handoff.cli;

import io.handoff.http.ServerConfig;
import io.handoff.router.Router;
import io.handoff.router.RouterConfig;
import io.handoff.core.runtime.Engine;
import io.handoff.core.scheduler.Timelines;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.net.BindException;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

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

    @Mixin
    ListenOptions listen;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        Set<URI> seen = new HashSet<>();
        List<URI> prefillUrls = urls("--prefill", prefills, seen);
        List<URI> decodeUrls = urls("--decode", decodes, seen);
        listen.applyTo(options.overrides);
        ServerConfig serverConfig;
        RouterConfig routerConfig;
        Timelines timelines;
        // The engine validates the configuration (with plugins' keys) and sets up logging; the router needs nothing else of it.
        try (Engine engine = Engine.start(options.source())) {
            serverConfig = ServerConfig.from(engine.config().config(), engine.security());
            routerConfig = RouterConfig.from(engine.config().config());
            timelines = new Timelines(engine.config().config().getInt("handoff.debug.timeline-requests"));
        }
        Router router;
        try {
            router = Router.start(serverConfig, routerConfig, prefillUrls, decodeUrls, timelines);
        }
        catch (BindException e) {
            throw ListenOptions.cannotListen(serverConfig, e);
        }
        String ready = "routing on http://" + router.address().getHostString() + ":" + router.address().getPort() + " to prefill "
                + prefillUrls + " and decode " + decodeUrls;
        ListenOptions.serveUntilSignalled(serverConfig, ready, () -> router.shutdown(serverConfig.gracePeriod()));
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
