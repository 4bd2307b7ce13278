package io.handoff.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.handoff.cli.DurationConverter;
import io.handoff.cli.Main;
import io.handoff.inspect.MergedTimeline;
import io.handoff.inspect.NodeTimeline;
import io.handoff.inspect.TimelineFetch;
import io.handoff.inspect.TimelineText;
import io.handoff.router.Router;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = {"Print one request's timeline across a router, its prefill and its decode: every event of every node on one time axis,",
                "then where the time went (queue, prefill compute, waiting for the decode, transfer, commit, first token, decode) and",
                "whether the KV matched. Reads GET /debug/requests/RID of each URL (handoff.server.debug-endpoints: on by default on loopback)."})
final class InspectCommand
        implements Callable<Integer>
{
    @Option(names = "--rid", required = true, paramLabel = "RID", description = "The request's rid (the one sent in /generate, or the router's).")
    String rid;

    @Parameters(arity = "1..*", paramLabel = "URL", description = "The nodes to ask: the router, the prefill and the decode, e.g. http://127.0.0.1:30000 (HOST:PORT means http://HOST:PORT).")
    List<String> urls = new ArrayList<>();

    @Option(names = "--api-key", paramLabel = "KEY", defaultValue = "${env:HANDOFF_API_KEY}",
            description = "Sent as 'Authorization: Bearer KEY' when the nodes require API keys (default: the environment variable HANDOFF_API_KEY).")
    String apiKey;

    @Option(names = "--json", description = "Print the merged timeline as JSON.")
    boolean json;

    @Option(names = "--timeout", defaultValue = "5s", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long each server may take to answer (default ${DEFAULT-VALUE}).")
    Duration timeout;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        List<URI> nodes = new ArrayList<>();
        for (String url : urls) {
            try {
                nodes.add(Router.backendUrl(url));
            }
            catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        if (timeout.toMillis() < 1) {
            throw new ParameterException(spec.commandLine(), "--timeout must be longer than 0, got " + timeout.toMillis() + "ms");
        }
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        List<NodeTimeline> timelines = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build()) {
            TimelineFetch fetch = new TimelineFetch(client, mapper, Optional.ofNullable(apiKey).filter(key -> !key.isBlank()), timeout);
            for (URI node : nodes) {
                try {
                    timelines.add(fetch.fetch(node, rid));
                }
                catch (IllegalStateException | IllegalArgumentException e) {
                    problems.add(e.getMessage());
                }
            }
        }
        PrintWriter err = spec.commandLine().getErr();
        problems.forEach(problem -> err.println("handoff inspect: " + problem));
        err.flush();
        if (timelines.isEmpty()) {
            return Main.FAILURE;
        }
        MergedTimeline merged = MergedTimeline.merge(rid, timelines);
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? mapper.writeValueAsString(TimelineText.json(merged, mapper)) + "\n" : TimelineText.text(merged));
        out.flush();
        // what could be fetched is printed, but a node that did not answer is a failure a script should see
        return problems.isEmpty() ? Main.OK : Main.FAILURE;
    }
}
