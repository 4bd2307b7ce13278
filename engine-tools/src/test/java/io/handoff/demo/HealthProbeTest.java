package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class HealthProbeTest
{
    /** Only the address of a node matters to the probe. */
    private record Listening(NodeSpec spec) implements Node
    {
        @Override
        public Optional<String> ended()
        {
            return Optional.empty();
        }

        @Override
        public boolean endedForTakenAddress()
        {
            return false;
        }

        @Override
        public String logLocation()
        {
            return "nowhere";
        }

        @Override
        public List<String> logTail(int lines)
        {
            return List.of();
        }

        @Override
        public void terminate() {}

        @Override
        public boolean awaitEnd(Duration timeout)
        {
            return false;
        }

        @Override
        public void kill() {}
    }

    private static Node at(int port)
    {
        return new Listening(new NodeSpec("decode", NodeSpec.Role.DECODE, port, List.of("serve")));
    }

    @Test
    void healthyWhenHealthAnswers200()
    {
        try (FakeServer server = new FakeServer().answer("/health", 200, "application/json", "{\"status\":\"ok\"}");
                HttpClient client = HttpClient.newHttpClient()) {
            assertThat(HealthProbe.http(client).check(at(server.url().getPort()))).isEmpty();
        }
    }

    @Test
    void anotherStatusIsReportedWithTheBody()
    {
        try (FakeServer server = new FakeServer().answer("/health", 503, "application/json", "{\"error\":{\"message\":\"loading\"}}");
                HttpClient client = HttpClient.newHttpClient()) {
            assertThat(HealthProbe.http(client).check(at(server.url().getPort())).orElseThrow())
                    .isEqualTo("GET " + server.url() + "/health answered HTTP 503: {\"error\":{\"message\":\"loading\"}}");
        }
    }

    @Test
    void nothingListeningYet()
    {
        int port = FreePorts.allocate(1).getFirst();
        try (HttpClient client = HttpClient.newHttpClient()) {
            assertThat(HealthProbe.http(client).check(at(port)).orElseThrow()).isEqualTo("nothing listens on 127.0.0.1:" + port + " yet (connection refused)");
        }
    }
}
