package io.handoff.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import io.handoff.cli.EngineOptions;
import io.handoff.cli.Main;
import io.handoff.cli.ServerSettings;
import io.handoff.cluster.Cluster;
import io.handoff.cluster.ClusterConfig;
import io.handoff.cluster.Discovery;
import io.handoff.cluster.Membership;
import io.handoff.cluster.MembershipView;
import io.handoff.cluster.StaticMembership;
import io.handoff.core.runtime.Engine;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.RouterCredentials;
import io.handoff.router.Router;
import io.handoff.status.ClusterStatus;
import io.handoff.status.RouterBackends;
import io.handoff.status.StatusCheck;
import io.handoff.status.StatusTable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

@Command(name = "status", mixinStandardHelpOptions = true,
        description = {"List the deployment's members and ask each one, at once, for its health, role, incarnation, load and prefix-cache hit rate.",
                "Membership comes from handoff.cluster.discovery (etcd or kubernetes; -D or --config), or --discovery; with static discovery from"
                        + " --prefill/--decode, or from a router's GET /backends (--router). Exit code 0 when the membership could be read, even if"
                        + " members are unhealthy or unreachable (the output says so); 1 when it could not."})
final class ClusterStatusCommand
        implements Callable<Integer>
{
    private static final ObjectMapper JSON = new ObjectMapper();

    @Mixin
    EngineOptions options;

    @Option(names = "--json", description = "Print one JSON object (discovery, source, stale, members) instead of the table.")
    boolean json;

    @Option(names = "--discovery", paramLabel = "static|etcd|kubernetes", description = "Where membership lives, over handoff.cluster.discovery.")
    String discovery;

    @Option(names = "--prefill", paramLabel = "URL", description = "With static discovery: a prefill server, as the router takes it. Repeatable.")
    List<String> prefills = new ArrayList<>();

    @Option(names = "--decode", paramLabel = "URL", description = "With static discovery: a decode server. Repeatable.")
    List<String> decodes = new ArrayList<>();

    @Option(names = "--router", paramLabel = "URL", description = "With static discovery: a router whose GET /backends lists the servers.")
    String router;

    @Option(names = "--timeout", defaultValue = "2s", paramLabel = "DURATION",
            description = "Longest each member (and the router) may take to answer, e.g. 2s or 500ms (default: ${DEFAULT-VALUE}).")
    String timeout;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        Duration answerTimeout = duration(timeout);
        if (discovery != null) {
            try {
                options.overrides.put("handoff.cluster.discovery", Discovery.parse(discovery).label());
            }
            catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--discovery: " + e.getMessage());
            }
        }
        ClusterConfig cluster;
        RouterCredentials credentials;
        // the engine validates the configuration and sets up logging; the check needs nothing else of it
        try (Engine engine = Engine.start(options.source())) {
            cluster = ClusterConfig.from(engine.config().config());
            credentials = ServerSettings.of(engine).access().routerCredentials();
        }
        checkSourceOptions(cluster.discovery());
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(answerTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .executor(executor)
                .build();
        ClusterStatus status;
        try {
            status = check(cluster, client, credentials, answerTimeout);
        }
        finally {
            // not close(): that would wait for a member that still trickles an answer past its timeout
            client.shutdownNow();
            executor.shutdownNow();
        }
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? JSON.writerWithDefaultPrettyPrinter().writeValueAsString(status.json()) + "\n" : StatusTable.render(status));
        out.flush();
        return Main.OK;
    }

    private ClusterStatus check(ClusterConfig cluster, HttpClient client, RouterCredentials credentials, Duration answerTimeout)
            throws InterruptedException
    {
        StatusCheck check = new StatusCheck(client, credentials, answerTimeout);
        String label = cluster.discovery().label();
        if (cluster.discovery() == Discovery.STATIC && router != null) {
            URI url = url("--router", router);
            MembershipView view;
            try {
                view = RouterBackends.read(client, credentials, url, answerTimeout);
            }
            catch (IOException e) {
                throw new IllegalStateException("could not read the servers of the router at " + url + ": " + e.getMessage());
            }
            return check.check(label, "router " + url + " (GET /backends)", view);
        }
        Membership membership = cluster.discovery() == Discovery.STATIC
                ? new StaticMembership(urls("--prefill", prefills), urls("--decode", decodes))
                : Cluster.membership(cluster);
        String source = membership.describe();
        MembershipView view;
        try {
            view = StatusCheck.readOnce(membership, readBound(cluster, answerTimeout));
        }
        catch (IOException e) {
            throw new IllegalStateException("could not read the membership from " + source + ": " + e.getMessage() + advice(cluster));
        }
        return check.check(label, source, view);
    }

    /**
     * How long reading the store may take. The etcd client bounds its own first read (a few attempts, each trying
     * every endpoint within request-timeout, retry-interval apart), the Kubernetes client its list call (10 s); this
     * guard is for a source that never returns.
     */
    private static Duration readBound(ClusterConfig cluster, Duration answerTimeout)
    {
        return switch (cluster.discovery()) {
            case ETCD -> cluster.etcd().requestTimeout().multipliedBy(cluster.etcd().endpoints().size()).plus(cluster.etcd().retryInterval())
                    .multipliedBy(4).plus(answerTimeout);
            case KUBERNETES -> Duration.ofSeconds(15).plus(answerTimeout);
            case STATIC -> answerTimeout;
        };
    }

    /** What to check when the store could not be read, as a sentence to append. */
    private static String advice(ClusterConfig cluster)
    {
        return switch (cluster.discovery()) {
            case ETCD -> {
                String endpoints = cluster.etcd().endpoints().stream().map(URI::toString).collect(Collectors.joining(","));
                yield ". Check that etcd answers at " + endpoints + " (handoff.cluster.etcd.endpoints) and that the servers register under "
                        + cluster.etcd().prefix() + " (handoff.cluster.etcd.prefix): etcdctl --endpoints=" + endpoints + " get --prefix "
                        + cluster.etcd().prefix() + " --keys-only";
            }
            case KUBERNETES -> ". Check handoff.cluster.kubernetes.api-server (empty: from KUBERNETES_SERVICE_HOST), namespace '"
                    + cluster.kubernetes().namespace() + "' and label-selector '" + cluster.kubernetes().labelSelector()
                    + "', and that the service account may list pods: kubectl get pods -l '" + cluster.kubernetes().labelSelector() + "'";
            case STATIC -> "";
        };
    }

    /** --prefill, --decode and --router belong to static discovery, and a static check needs the one or the other. */
    private void checkSourceOptions(Discovery configured)
    {
        boolean lists = !prefills.isEmpty() || !decodes.isEmpty();
        if (configured != Discovery.STATIC) {
            if (lists || router != null) {
                throw new ParameterException(spec.commandLine(), "--prefill, --decode and --router are for static discovery; handoff.cluster.discovery is "
                        + configured.label() + " (give --discovery static to list servers yourself)");
            }
            return;
        }
        if (lists && router != null) {
            throw new ParameterException(spec.commandLine(), "give either --prefill/--decode or --router, not both");
        }
        if (!lists && router == null) {
            throw new ParameterException(spec.commandLine(), "static discovery has no membership store: give --prefill and --decode URLs, or --router URL,"
                    + " or read a store with --discovery etcd -Dhandoff.cluster.etcd.endpoints=http://HOST:2379");
        }
    }

    private List<URI> urls(String option, List<String> given)
    {
        List<URI> urls = new ArrayList<>();
        for (String text : given) {
            URI url = url(option, text);
            if (urls.contains(url)) {
                throw new ParameterException(spec.commandLine(), option + ": " + url + " is given more than once");
            }
            urls.add(url);
        }
        return urls;
    }

    private URI url(String option, String text)
    {
        try {
            return Router.backendUrl(text);
        }
        catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), option + ": " + e.getMessage());
        }
    }

    /** A duration as the configuration writes one (2s, 500ms); a bare number is refused, since its unit would be a guess. */
    private Duration duration(String text)
    {
        String problem = "--timeout must be a duration with a unit, e.g. 2s or 500ms, was '" + text + "'";
        if (text.strip().matches("[0-9.]*")) {
            throw new ParameterException(spec.commandLine(), problem);
        }
        Duration parsed;
        try {
            parsed = ConfigFactory.parseMap(Map.of("timeout", text)).getDuration("timeout");
        }
        catch (ConfigException e) {
            throw new ParameterException(spec.commandLine(), problem);
        }
        if (parsed.isNegative() || parsed.isZero()) {
            throw new ParameterException(spec.commandLine(), "--timeout must be positive, was '" + text + "'");
        }
        return parsed;
    }
}
