package io.handoff.cli;

import io.handoff.cluster.Cluster;
import io.handoff.cluster.ClusterConfig;
import io.handoff.cluster.Discovery;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.Membership;
import io.handoff.cluster.StaticMembership;

import io.handoff.core.runtime.Engine;
import io.handoff.http.base.ServerConfig;
import io.handoff.router.Router;
import io.handoff.router.RouterConfig;
import io.handoff.trace.Timelines;
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
                "Each request goes to a healthy prefill (by handoff.router.policy.prefill, cache-aware by default) and a healthy decode (by"
                        + " handoff.router.policy.decode, least-load by default) with one rid and KV-transfer room; the client gets the decode's"
                        + " response. GET /backends lists the servers and their health."})
final class RouterCommand
        implements Callable<Integer>
{
    private static final Logger log = LogManager.getLogger(RouterCommand.class);

    @Mixin
    EngineOptions options;

    @Option(names = "--prefill", paramLabel = "URL", description = "A prefill server, e.g. http://10.0.0.5:30000 (HOST:PORT means http://HOST:PORT). Repeatable; at least one"
            + " under static discovery; none when the router finds its servers through handoff.cluster.discovery = etcd or kubernetes.")
    List<String> prefills = new ArrayList<>();

    @Option(names = "--decode", paramLabel = "URL", description = "A decode server, e.g. http://10.0.0.6:30000. Repeatable; at least one under static"
            + " discovery, as --prefill.")
    List<String> decodes = new ArrayList<>();

    @Mixin
    ListenOptions listen;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        listen.applyTo(options.overrides);
        ParentWatch.fromEnvironment();
        ServerConfig serverConfig;
        RouterConfig routerConfig;
        ClusterConfig cluster;
        Timelines timelines;
        // The engine validates the configuration (with plugins' keys) and sets up logging; the router needs nothing else of it.
        try (Engine engine = Engine.start(options.source())) {
            serverConfig = ServerSettings.of(engine);
            routerConfig = RouterConfig.from(engine.config().config());
            cluster = ClusterConfig.from(engine.config().config());
            timelines = new Timelines(engine.config().config().getInt("handoff.debug.timeline-requests"));
        }
        Membership membership = membership(cluster);
        Router router;
        try {
            router = Router.start(serverConfig, routerConfig, membership, timelines);
        }
        catch (BindException e) {
            throw ListenOptions.cannotListen(serverConfig, e);
        }
        String ready = "routing on http://" + router.address().getHostString() + ":" + router.address().getPort() + " to the servers of "
                + membership.describe() + ": prefill " + membership.current().of(MemberRole.PREFILL).stream().map(Member::http).toList() + " and decode "
                + membership.current().of(MemberRole.DECODE).stream().map(Member::http).toList();
        ListenOptions.serveUntilSignalled(serverConfig, ready, () -> router.shutdown(serverConfig.gracePeriod()));
        return Main.OK;
    }

    /** The command line's lists under static discovery; otherwise the store's members, with no list given. */
    private Membership membership(ClusterConfig cluster)
    {
        if (cluster.discovery() != Discovery.STATIC) {
            if (!prefills.isEmpty() || !decodes.isEmpty()) {
                throw new ParameterException(spec.commandLine(), "handoff.cluster.discovery = " + cluster.discovery().label()
                        + ": the router finds its servers there; leave out --prefill and --decode (or set handoff.cluster.discovery = static)");
            }
            return Cluster.membership(cluster);
        }
        Set<URI> seen = new HashSet<>();
        return new StaticMembership(urls("--prefill", prefills, seen), urls("--decode", decodes, seen));
    }

    private List<URI> urls(String option, List<String> given, Set<URI> seen)
    {
        if (given.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "at least one " + option + " URL is required"
                    + " (a server started with handoff serve --role " + option.substring(2) + "), or servers found through"
                    + " handoff.cluster.discovery = etcd or kubernetes");
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
