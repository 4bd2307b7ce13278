package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;

import static org.assertj.core.api.Assertions.assertThat;

/** SIGTERM to {@code handoff serve}: in-flight work is aborted within the grace period, every page freed, the process exits. */
class ServeShutdownIT
{
    private static final Duration GRACE = Duration.ofSeconds(3);

    @TempDir
    Path temp;

    @Test
    void sigtermAbortsInFlightRequestsWithinTheGracePeriodFreesEveryPageAndExits()
            throws Exception
    {
        try (ServerProcess server = ServerProcess.start(temp, "-Dhandoff.server.grace-period=" + GRACE.toSeconds() + "s",
                "-Dhandoff.kv.pool-pages=512")) {
            Iterator<String> lines = server.stream("/generate", "{\"text\": \"never ending\", \"stream\": true, "
                    + "\"sampling_params\": {\"max_new_tokens\": 4000, \"ignore_eos\": true}}").body().iterator();
            String first = lines.next();
            assertThat(first).startsWith("data: {");

            // Bounded, not timed: the shutdown itself ends by the grace period; the rest is JVM exit.
            boolean exited = server.terminate(GRACE.plusSeconds(30));

            assertThat(exited).as("exited after SIGTERM; log:\n%s", server.logText()).isTrue();
            assertThat(server.process.exitValue()).isEqualTo(128 + 15);
            String log = server.logText();
            assertThat(log).contains("shutting down: no new requests; in-flight ones have 3000 ms to finish",
                    "aborting 1 in-flight request(s) that did not finish within the grace period",
                    "freed every KV page (512 of 512 free)", "stopped");
            String previous = null;
            String last = first;
            while (lines.hasNext()) {
                String line = lines.next();
                if (line.startsWith("data: ")) {
                    previous = last;
                    last = line;
                }
            }
            assertThat(last).isEqualTo("data: [DONE]");
            JsonNode outcome = ServerProcess.json(previous.substring(6));
            assertThat(outcome.get("meta_info").get("finish_reason").get("type").asText()).isEqualTo("abort");
        }
    }
}
