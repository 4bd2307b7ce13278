package io.handoff.chaos;

import io.handoff.demo.PrometheusSamples;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

/** The router's {@code handoff_router_retries_total} by cause, as read once after the soak; unknown when unreadable. */
record RouterRetries(boolean known, Map<String, Long> byCause)
{
    static final String RETRIES = "handoff_router_retries_total";

    static RouterRetries read(HttpClient http, URI router)
            throws InterruptedException
    {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(router.resolve("/metrics")).timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                return new RouterRetries(false, Map.of());
            }
            Map<String, Long> byCause = new TreeMap<>();
            boolean any = false;
            for (PrometheusSamples.Sample sample : PrometheusSamples.parse(response.body()).samples()) {
                if (sample.name().equals(RETRIES)) {
                    any = true;
                    byCause.merge(sample.labels().getOrDefault("cause", "unknown"), Math.round(sample.value()), Long::sum);
                }
            }
            return new RouterRetries(any, byCause);
        }
        catch (IOException | IllegalArgumentException e) {
            return new RouterRetries(false, Map.of());
        }
    }
}
