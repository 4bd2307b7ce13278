package io.handoff.demo;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Optional;

/** Whether a node is ready: empty when it is, otherwise what the probe saw ("connection refused", "HTTP 503 ..."). */
@FunctionalInterface
public interface HealthProbe
{
    Optional<String> check(Node node);

    /** {@code GET <url>/health} answering 200. */
    static HealthProbe http(HttpClient client)
    {
        return node -> {
            URI uri = node.spec().url().resolve("/health");
            try {
                HttpResponse<String> response = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(2)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200) {
                    return Optional.empty();
                }
                String body = response.body().strip();
                return Optional.of("GET " + uri + " answered HTTP " + response.statusCode() + (body.isEmpty() ? "" : ": " + abbreviate(body)));
            }
            catch (ConnectException e) {
                return Optional.of("nothing listens on " + uri.getAuthority() + " yet (connection refused)");
            }
            catch (HttpTimeoutException e) {
                return Optional.of("GET " + uri + " did not answer within 2 s");
            }
            catch (IOException e) {
                return Optional.of("GET " + uri + " failed: " + e);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.of("interrupted");
            }
        };
    }

    private static String abbreviate(String text)
    {
        return text.length() <= 300 ? text : text.substring(0, 300) + "...";
    }
}
