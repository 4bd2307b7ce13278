package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.OptionalLong;

import static java.util.Objects.requireNonNull;

/**
 * The KV bytes the decodes behind a router have received ({@code handoff_kv_received_bytes_total}, summed over the decodes
 * its {@code GET /backends} lists): read before and after a run, the bytes its requests moved. Empty for a URL that is not
 * a router (a colocated server moves no KV), or when a decode cannot be read.
 */
final class KvMoved
{
    private static final String METRIC = "handoff_kv_received_bytes_total";

    private final HttpClient http;
    private final ObjectMapper json = new ObjectMapper();

    KvMoved(HttpClient http)
    {
        this.http = requireNonNull(http, "http is null");
    }

    OptionalLong total(URI router)
            throws InterruptedException
    {
        try {
            HttpResponse<String> backends = get(router.resolve("/backends"));
            if (backends.statusCode() != 200) {
                return OptionalLong.empty();
            }
            long total = 0;
            boolean any = false;
            for (JsonNode backend : json.readTree(backends.body())) {
                if (!"decode".equals(backend.path("role").asText()) || !backend.path("url").isTextual()) {
                    continue;
                }
                HttpResponse<String> metrics = get(URI.create(backend.path("url").asText()).resolve("/metrics"));
                if (metrics.statusCode() != 200) {
                    return OptionalLong.empty();
                }
                for (String line : metrics.body().lines().toList()) {
                    if (line.startsWith(METRIC + " ")) {
                        total += (long) Double.parseDouble(line.substring(METRIC.length() + 1).strip());
                        any = true;
                    }
                }
            }
            return any ? OptionalLong.of(total) : OptionalLong.empty();
        }
        catch (IOException | IllegalArgumentException e) {
            return OptionalLong.empty();
        }
    }

    private HttpResponse<String> get(URI uri)
            throws IOException, InterruptedException
    {
        return http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
