package io.handoff.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.demo.StreamingClient;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import static java.util.Objects.requireNonNull;

/**
 * The soak's client: one streamed, greedy request per call through the router, aborted as its {@link AbortPlan} says
 * ({@code POST /abort_request} to the router, or closing the connection), and ended by a deadline of its own. Never
 * throws for what the servers or the connection did: that is the outcome.
 */
final class ChaosClient
        implements AutoCloseable
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_ERROR_BODY = 4000;
    // How long the client keeps asking the router to abort a request it does not have yet (it is being sent).
    private static final long ABORT_LOOKUP_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final URI router;
    private final String ridPrefix;
    private final int maxNewTokens;
    private final Duration deadline;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("chaos-request-deadline").factory());

    ChaosClient(URI router, String ridPrefix, int maxNewTokens, Duration deadline)
    {
        this.router = requireNonNull(router, "router is null");
        this.ridPrefix = requireNonNull(ridPrefix, "ridPrefix is null");
        this.maxNewTokens = maxNewTokens;
        this.deadline = requireNonNull(deadline, "deadline is null");
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
        HttpRequest request = HttpRequest.newBuilder(router.resolve("/generate"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build();
        long deadlineNanos = System.nanoTime() + deadline.toNanos();
        CompletableFuture<HttpResponse<InputStream>> call = client.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream());
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
                    byte[] error = in.readNBytes(MAX_ERROR_BODY);
                    return abortSent ? RequestOutcome.aborted(index, new int[0], plan) : httpFailure(index, response.statusCode(), error, plan);
                }
                AtomicBoolean timedOut = new AtomicBoolean();
                // A stalled stream would block the read forever; closing it from here ends the read.
                ScheduledFuture<?> timeout = watchdog.schedule(() -> {
                    timedOut.set(true);
                    closeQuietly(in);
                }, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
                try {
                    return read(index, rid, in, plan, abortSent, timedOut);
                }
                finally {
                    timeout.cancel(false);
                }
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

    private RequestOutcome read(int index, String rid, InputStream in, AbortPlan plan, boolean abortSent, AtomicBoolean timedOut)
            throws InterruptedException
    {
        int[] ids = new int[0];
        JsonNode finishReason = null;
        boolean aborting = abortSent;
        try {
            if (plan.phase() == AbortPlan.Phase.DURING_TRANSFER) {
                if (plan.method() == AbortPlan.Method.DISCONNECT) {
                    return RequestOutcome.aborted(index, ids, plan);
                }
                aborting = abort(rid);
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = reader.readLine()) != null) {
                if (!line.startsWith("data:")) {
                    continue;
                }
                String data = line.substring("data:".length()).strip();
                if (data.equals("[DONE]")) {
                    break;
                }
                JsonNode event = JSON.readTree(data);
                if (event.has("error")) {
                    return aborting ? RequestOutcome.aborted(index, ids, plan) : failure(index, ids, event, plan);
                }
                int[] cumulative = ids(event.path("output_ids"));
                if (cumulative.length >= ids.length) {
                    ids = cumulative;
                }
                JsonNode reason = event.path("meta_info").path("finish_reason");
                if (!reason.isMissingNode() && !reason.isNull()) {
                    finishReason = reason;
                }
                if (plan.phase() == AbortPlan.Phase.DURING_DECODE && !aborting && finishReason == null && ids.length >= plan.afterTokens()) {
                    if (plan.method() == AbortPlan.Method.DISCONNECT) {
                        return RequestOutcome.aborted(index, ids, plan);
                    }
                    aborting = abort(rid);
                }
            }
        }
        catch (IOException e) {
            if (timedOut.get()) {
                return RequestOutcome.hung(index, ids, "no end of the stream within " + deadline.toSeconds() + " s", plan);
            }
            return aborting ? RequestOutcome.aborted(index, ids, plan)
                    : RequestOutcome.failed(index, ids, "stream_broken", "the stream broke: " + e, plan);
        }
        if (timedOut.get()) {
            return RequestOutcome.hung(index, ids, "no end of the stream within " + deadline.toSeconds() + " s", plan);
        }
        if (finishReason == null) {
            return aborting ? RequestOutcome.aborted(index, ids, plan)
                    : RequestOutcome.failed(index, ids, "stream_broken", "the stream ended without a finish reason after " + ids.length + " tokens", plan);
        }
        if (finishReason.path("type").asText("").equals("abort")) {
            return aborting ? RequestOutcome.aborted(index, ids, plan)
                    : RequestOutcome.failed(index, ids, "server_abort", "aborted by the server: " + finishReason.path("message").asText(""), plan);
        }
        // an abort that came after the end changes nothing: the request completed
        return RequestOutcome.completed(index, ids, plan);
    }

    /** Asks the router to abort {@code rid} until it has it (the request may still be on its way), or the call ended. */
    private boolean abortOnceKnown(String rid, CompletableFuture<?> call)
            throws InterruptedException
    {
        long until = System.nanoTime() + ABORT_LOOKUP_NANOS;
        while (!call.isDone() && System.nanoTime() - until < 0) {
            if (abort(rid)) {
                return true;
            }
            // the router has not read the request yet: ask again in a moment, bounded above
            Thread.sleep(1);
        }
        return false;
    }

    /** {@code POST /abort_request}; true when the router had the rid in flight. */
    private boolean abort(String rid)
            throws InterruptedException
    {
        HttpRequest request = HttpRequest.newBuilder(router.resolve("/abort_request"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode().put("rid", rid).toString()))
                .build();
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        }
        catch (IOException e) {
            return false;
        }
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

    private static int[] ids(JsonNode array)
    {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = array.get(i).asInt();
        }
        return ids;
    }

    private static void closeQuietly(InputStream in)
    {
        try {
            in.close();
        }
        catch (IOException ignored) {
            // the reader sees the stream end either way
        }
    }

    @Override
    public void close()
    {
        watchdog.shutdownNow();
        client.close();
    }
}
