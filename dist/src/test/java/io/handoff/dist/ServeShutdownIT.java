package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** SIGTERM to {@code handoff serve}: in-flight work is aborted within the grace period, every page freed, the process exits. */
class ServeShutdownIT
{
    // Requests still running at 3/4 of the grace period are aborted and get until 9/10 of it to end their streams.
    private static final Duration GRACE = Duration.ofSeconds(4);

    @TempDir
    Path temp;

    @Test
    void sigtermAbortsInFlightRequestsWithinTheGracePeriodFreesEveryPageAndExits()
            throws Exception
    {
        // The reader is closed last, once the server is gone and its stream has ended.
        try (ExecutorService reader = Executors.newVirtualThreadPerTaskExecutor();
                ServerProcess server = ServerProcess.start(temp, "-Dhandoff.server.grace-period=" + GRACE.toSeconds() + "s",
                        "-Dhandoff.kv.pool-pages=512")) {
            Iterator<String> lines = server.stream("/generate", "{\"text\": \"never ending\", \"stream\": true, "
                    + "\"sampling_params\": {\"max_new_tokens\": 4000, \"ignore_eos\": true}}").body().iterator();
            String first = lines.next();
            assertThat(first).startsWith("data: {");
            // Keep reading while the server shuts down: a client that stops reading would leave the stream blocked on a full socket.
            CompletableFuture<List<String>> rest = CompletableFuture.supplyAsync(() -> {
                List<String> events = new ArrayList<>();
                lines.forEachRemaining(line -> {
                    if (line.startsWith("data: ")) {
                        events.add(line);
                    }
                });
                return events;
            }, reader);

            // Bounded, not timed: the shutdown itself ends by the grace period; the rest is JVM exit.
            boolean exited = server.terminate(GRACE.plusSeconds(30));

            assertThat(exited).as("exited after SIGTERM; log:\n%s", server.logText()).isTrue();
            assertThat(server.process.exitValue()).isEqualTo(128 + 15);
            String log = server.logText();
            assertThat(log).contains("shutting down: no new requests; in-flight ones have 4000 ms to finish",
                    "aborting 1 in-flight request(s) that did not finish within the grace period",
                    "freed every KV page (512 of 512 free)", "stopped");
            List<String> events = rest.get(30, TimeUnit.SECONDS);
            assertThat(events).hasSizeGreaterThanOrEqualTo(2);
            String previous = events.get(events.size() - 2);
            String last = events.getLast();
            assertThat(last).isEqualTo("data: [DONE]");
            JsonNode outcome = ServerProcess.json(previous.substring(6));
            assertThat(outcome.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
        }
    }
}
