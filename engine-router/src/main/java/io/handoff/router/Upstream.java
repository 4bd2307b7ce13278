package io.handoff.router;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.security.RouterCredentials;
import io.handoff.http.base.security.RouterSigner;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

import static java.util.Objects.requireNonNull;

/**
 * The router's HTTP/1.1 client to its prefill and decode servers. Every call carries the router's API key (the
 * first of {@code handoff.server.api-keys}: a deployment's processes share one list) and, with a cluster secret,
 * the router's signature, which is what lets a server take the {@code bootstrap_*} fields from it.
 */
final class Upstream
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(Upstream.class);
    private static final byte[] NO_BODY = new byte[0];

    private final HttpClient client;
    private final RouterConfig config;
    private final RouterCredentials credentials;

    Upstream(RouterConfig config, Executor executor)
    {
        this(config, executor, Optional.empty(), RouterSigner.NONE);
    }

    Upstream(RouterConfig config, Executor executor, Optional<String> apiKey, RouterSigner signer)
    {
        this.config = requireNonNull(config, "config is null");
        this.credentials = new RouterCredentials(apiKey, signer);
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(config.connectTimeout())
                .followRedirects(HttpClient.Redirect.NEVER)
                .executor(requireNonNull(executor, "executor is null"))
                .build();
    }

    /** Starts {@code POST path} with a JSON body; the future fails only when no response (not even an error status) came back. */
    <T> CompletableFuture<HttpResponse<T>> post(Backend backend, String path, JsonNode body, HttpResponse.BodyHandler<T> handler)
    {
        return client.sendAsync(postRequest(backend, path, body, config.requestTimeout()), handler);
    }

    HttpResponse<byte[]> get(Backend backend, String path, Duration timeout)
            throws IOException, InterruptedException
    {
        URI uri = backend.resolve(path);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(timeout).GET();
        return client.send(credentials(request, "GET", uri, NO_BODY).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /**
     * {@code POST /abort_request {"rid": rid}}, waiting at most {@code handoff.router.health-timeout}; returns
     * the status, or -1 when the server could not be reached (it is then gone, and so is the request).
     */
    int abort(Backend backend, String rid)
            throws InterruptedException
    {
        try {
            return abortAsync(backend, rid).get().statusCode();
        }
        catch (ExecutionException e) {
            log.debug("abort of rid {} on {} failed: {}", rid, backend, e.getCause().toString());
            return -1;
        }
    }

    CompletableFuture<HttpResponse<Void>> abortAsync(Backend backend, String rid)
    {
        ObjectNode body = JsonFields.MAPPER.createObjectNode().put("rid", rid);
        return client.sendAsync(postRequest(backend, "/abort_request", body, config.healthTimeout()), HttpResponse.BodyHandlers.discarding());
    }

    private HttpRequest postRequest(Backend backend, String path, JsonNode body, Duration timeout)
    {
        byte[] bytes;
        try {
            bytes = JsonFields.MAPPER.writeValueAsBytes(body);
        }
        catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
        URI uri = backend.resolve(path);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(bytes));
        return credentials(request, "POST", uri, bytes).build();
    }

    private HttpRequest.Builder credentials(HttpRequest.Builder request, String method, URI uri, byte[] body)
    {
        return credentials.apply(request, method, uri, body);
    }

    /** What the client is told when {@code backend} gave no response: 504 after a timeout, 502 otherwise; both name the server. */
    ApiError failure(Backend backend, Throwable failure)
    {
        Throwable cause = unwrap(failure);
        String who = backend.describe();
        String code = backend.role().label() + "_failed";
        return switch (cause) {
            case HttpConnectTimeoutException _ -> ApiError.badGateway(code, who + " did not accept a connection within "
                    + config.connectTimeout().toMillis() + " ms (handoff.router.connect-timeout)");
            case HttpTimeoutException _ -> ApiError.gatewayTimeout(backend.role().label() + "_timeout", who + " did not answer within "
                    + config.requestTimeout().toSeconds() + " s (handoff.router.request-timeout)");
            case ConnectException _ -> ApiError.badGateway(code, who + " refused the connection; is it running?");
            default -> ApiError.badGateway(code, who + " failed: " + describe(cause));
        };
    }

    /** True when the failure says the server is not there at all (as opposed to slow or mid-request). */
    static boolean unreachable(Throwable failure)
    {
        return unwrap(failure) instanceof ConnectException;
    }

    static Throwable unwrap(Throwable failure)
    {
        return NoAnswer.unwrap(failure);
    }

    /** A failure to reach a server, in words (the JDK's own messages are often empty). */
    static String describe(Throwable failure)
    {
        return NoAnswer.describe(failure);
    }

    @Override
    public void close()
    {
        client.shutdownNow();
    }
}
