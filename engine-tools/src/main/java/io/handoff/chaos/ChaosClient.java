package io.handoff.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.client.GenerateClient;
import io.handoff.demo.StreamingClient;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * The soak's client: one streamed, greedy request per call through the router (the tools' {@link GenerateClient}),
 * aborted as its {@link AbortPlan} says ({@code POST /abort_request} to the router, or closing the connection), and
 * ended by a deadline of its own. Never throws for what the servers or the connection did: that is the outcome.
 */
final class ChaosClient
        implements AutoCloseable
{
    private static final ObjectMapper JSON = new ObjectMapper();
    // How long the client keeps asking the router to abort a request it does not have yet (it is being sent).
    private static final long ABORT_LOOKUP_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final URI router;
    private final String ridPrefix;
    private final int maxNewTokens;
    private final Duration deadline;
    private final GenerateClient client;

    ChaosClient(URI router, String ridPrefix, int maxNewTokens, Duration deadline)
    {
        this.router = requireNonNull(router, "router is null");
        this.ridPrefix = requireNonNull(ridPrefix, "ridPrefix is null");
        this.maxNewTokens = maxNewTokens;
        this.deadline = requireNonNull(deadline, "deadline is null");
        this.client = new GenerateClient(router, "chaos-request-deadline");
    }

    String rid(int index)
    {
        return ridPrefix + "-" + index;
    }

    RequestOutcome run(int index, String prompt, AbortPlan plan)
    {
        String rid = rid(index);
        ObjectNode body = StreamingClient.body(prompt, maxNewTokens);
        body.put("rid", rid);
        long start = System.nanoTime();
        long deadlineNanos = start + deadline.toNanos();
        CompletableFuture<HttpResponse<InputStream>> call = client.post("/generate", body);
        boolean abortSent = false;
        try {
            if (plan.phase() == AbortPlan.Phase.BEFORE_BOOTSTRAP) {
                abortSent = abortOnceKnown(rid, call);
            }
            HttpResponse<InputStream> response;
            try {
                response = call.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            catch (TimeoutException e) {
                call.cancel(true);
                return RequestOutcome.hung(index, new int[0], "no response headers within " + deadline.toSeconds() + " s", plan);
            }
            catch (ExecutionException e) {
                return abortSent ? RequestOutcome.aborted(index, new int[0], plan)
                        : RequestOutcome.failed(index, new int[0], "connection", "POST /generate failed: " + e.getCause(), plan);
            }
            try (InputStream in = response.body()) {
                if (response.statusCode() != 200) {
                    byte[] error = GenerateClient.errorBody(in);
                    return abortSent ? RequestOutcome.aborted(index, new int[0], plan) : httpFailure(index, response.statusCode(), error, plan);
                }
                return read(index, rid, in, start, deadlineNanos, plan, abortSent);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return RequestOutcome.failed(index, new int[0], "interrupted", "the soak was interrupted", plan);
        }
        catch (IOException e) {
            return abortSent ? RequestOutcome.aborted(index, new int[0], plan)
                    : RequestOutcome.failed(index, new int[0], "connection", "reading the response failed: " + e, plan);
        }
    }

    private RequestOutcome read(int index, String rid, InputStream in, long start, long deadlineNanos, AbortPlan plan, boolean abortSent)
            throws InterruptedException
    {
        boolean[] aborting = {abortSent};
        if (plan.phase() == AbortPlan.Phase.DURING_TRANSFER) {
            if (plan.method() == AbortPlan.Method.DISCONNECT) {
                return RequestOutcome.aborted(index, new int[0], plan);
            }
            aborting[0] = client.abort(rid);
        }
        GenerateClient.Streamed stream = client.read(in, start, deadlineNanos, (ids, finishReason) -> {
            if (plan.phase() == AbortPlan.Phase.DURING_DECODE && !aborting[0] && finishReason == null && ids.length >= plan.afterTokens()) {
                if (plan.method() == AbortPlan.Method.DISCONNECT) {
                    return false;
                }
                try {
                    aborting[0] = client.abort(rid);
                }
                catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        });
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        int[] ids = stream.outputIds();
        return switch (stream.end()) {
            case STOPPED -> RequestOutcome.aborted(index, ids, plan);
            case TIMED_OUT -> RequestOutcome.hung(index, ids, "no end of the stream within " + deadline.toSeconds() + " s", plan);
            case BROKEN -> aborting[0] ? RequestOutcome.aborted(index, ids, plan)
                    : RequestOutcome.failed(index, ids, "stream_broken", "the stream broke: " + stream.failure(), plan);
            case ERROR_EVENT -> aborting[0] ? RequestOutcome.aborted(index, ids, plan) : failure(index, ids, stream.errorEvent().orElseThrow(), plan);
            case DONE, NO_DONE -> {
                if (stream.finishReason().isEmpty()) {
                    yield aborting[0] ? RequestOutcome.aborted(index, ids, plan)
                            : RequestOutcome.failed(index, ids, "stream_broken", "the stream ended without a finish reason after " + ids.length + " tokens", plan);
                }
                if (stream.abortedByServer()) {
                    yield aborting[0] ? RequestOutcome.aborted(index, ids, plan)
                            : RequestOutcome.failed(index, ids, "server_abort", "aborted by the server: " + stream.serverMessage(), plan);
                }
                // an abort that came after the end changes nothing: the request completed
                yield RequestOutcome.completed(index, ids, plan);
            }
        };
    }

    /** Asks the router to abort {@code rid} until it has it (the request may still be on its way), or the call ended. */
    private boolean abortOnceKnown(String rid, CompletableFuture<?> call)
            throws InterruptedException
    {
        long until = System.nanoTime() + ABORT_LOOKUP_NANOS;
        while (!call.isDone() && System.nanoTime() - until < 0) {
            if (client.abort(rid)) {
                return true;
            }
            // the router has not read the request yet: ask again in a moment, bounded above
            Thread.sleep(1);
        }
        return false;
    }

    private static RequestOutcome httpFailure(int index, int status, byte[] body, AbortPlan plan)
    {
        try {
            JsonNode error = JSON.readTree(body);
            if (error != null && error.has("error")) {
                RequestOutcome named = failure(index, new int[0], error, plan);
                return named.cause().isEmpty()
                        ? RequestOutcome.failed(index, new int[0], "http_" + status, named.detail(), plan) : named;
            }
        }
        catch (IOException ignored) {
            // not JSON: the status says what there is to say
        }
        return RequestOutcome.failed(index, new int[0], "http_" + status, new String(body, StandardCharsets.UTF_8).strip(), plan);
    }

    private static RequestOutcome failure(int index, int[] ids, JsonNode body, AbortPlan plan)
    {
        JsonNode error = body.path("error");
        String cause = error.path("cause").asText("");
        String message = error.path("message").asText(error.toString());
        return RequestOutcome.failed(index, ids, cause.isEmpty() ? error.path("code").asText("unknown") : cause, message, plan);
    }

    @Override
    public void close()
    {
        client.close();
    }
}
