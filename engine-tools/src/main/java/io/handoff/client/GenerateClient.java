package io.handoff.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

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
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static java.util.Objects.requireNonNull;

/**
 * The tools' one client of a Handoff server or router: {@code POST /generate} with {@code stream: true}, read as
 * server-sent events (cumulative {@code output_ids} per chunk, a finish reason in the last, then {@code [DONE]}), every
 * output token timed as it arrives, and a deadline that closes a stalled stream. The demo, the soak and
 * {@code bench serving} each turn a {@link Streamed} into their own result; none of them reads HTTP or SSE itself.
 */
public final class GenerateClient
        implements AutoCloseable
{
    /** How a stream ended, as the client saw it. */
    public enum End
    {
        /** {@code [DONE]} arrived. */
        DONE,
        /** A chunk carried an {@code error}. */
        ERROR_EVENT,
        /** The {@link ChunkListener} stopped reading (the caller closes the connection). */
        STOPPED,
        /** The stream ended without {@code [DONE]}. */
        NO_DONE,
        /** Reading failed ({@link Streamed#failure}). */
        BROKEN,
        /** The deadline passed and the stream was closed. */
        TIMED_OUT
    }

    /**
     * A stream as read: the output ids so far (cumulative chunks never shrink them), when the first token came (ms after
     * the request was sent; NaN before one), the gaps between later tokens (ms; tokens read together are 0 apart), the
     * finish reason and error chunk when there were any, and how it ended.
     */
    public record Streamed(int[] outputIds, double ttftMillis, double[] interTokenMillis, Optional<JsonNode> finishReason,
            Optional<JsonNode> errorEvent, End end, String failure)
    {
        public Streamed
        {
            requireNonNull(outputIds, "outputIds is null");
            requireNonNull(interTokenMillis, "interTokenMillis is null");
            requireNonNull(finishReason, "finishReason is null");
            requireNonNull(errorEvent, "errorEvent is null");
            requireNonNull(end, "end is null");
            requireNonNull(failure, "failure is null");
        }

        /** Whether the server ended the request as an abort ({@code finish_reason.type} is {@code abort}). */
        public boolean abortedByServer()
        {
            return finishReason.map(reason -> reason.path("type").asText("").equals("abort")).orElse(false);
        }

        /** The message of the error chunk, or of an abort finish reason. */
        public String serverMessage()
        {
            return errorEvent.map(error -> error.path("error").path("message").asText(error.path("error").toString()))
                    .or(() -> finishReason.map(reason -> reason.path("message").asText("")))
                    .orElse("");
        }
    }

    /** Sees each chunk's cumulative output ids and finish reason (null until the last); returns false to stop reading. */
    @FunctionalInterface
    public interface ChunkListener
    {
        ChunkListener READ_ALL = (ids, finishReason) -> true;

        boolean onChunk(int[] outputIds, JsonNode finishReason);
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_ERROR_BODY = 4000;

    private final URI base;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    private final ScheduledExecutorService watchdog;

    /** @param name names the thread that closes streams past their deadline */
    public GenerateClient(URI base, String name)
    {
        this.base = requireNonNull(base, "base is null");
        this.watchdog = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name(requireNonNull(name, "name is null")).factory());
    }

    public URI base()
    {
        return base;
    }

    /** {@code POST path} with a JSON body; the response's body is a stream, read with {@link #read} or {@link #errorMessage}. */
    public CompletableFuture<HttpResponse<InputStream>> post(String path, JsonNode body)
    {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build();
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream());
    }

    /** {@code GET path}, its body as text. */
    public HttpResponse<String> get(String path, Duration timeout)
            throws IOException, InterruptedException
    {
        return client.send(HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@code POST /abort_request} for {@code rid}; true when the server or router had it in flight. */
    public boolean abort(String rid)
            throws InterruptedException
    {
        HttpRequest request = HttpRequest.newBuilder(base.resolve("/abort_request"))
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

    /**
     * Reads a {@code /generate} stream until it ends, {@code listener} stops it, or {@code deadlineNanos}
     * ({@link System#nanoTime}) passes: then the stream is closed from another thread, which ends a read that would
     * block forever. Never throws for what the server or the connection did: that is the result's {@link End}.
     */
    public Streamed read(InputStream in, long startNanos, long deadlineNanos, ChunkListener listener)
    {
        AtomicBoolean timedOut = new AtomicBoolean();
        ScheduledFuture<?> timeout = watchdog.schedule(() -> {
            timedOut.set(true);
            closeQuietly(in);
        }, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        Events events = new Events(startNanos);
        try {
            End end = events.read(in, listener);
            return events.result(timedOut.get() ? End.TIMED_OUT : end, "");
        }
        catch (IOException e) {
            return events.result(timedOut.get() ? End.TIMED_OUT : End.BROKEN, e.toString());
        }
        finally {
            timeout.cancel(false);
        }
    }

    /** The first {@value #MAX_ERROR_BODY} bytes of an error response: enough for its JSON error, bounded whatever the server sends. */
    public static byte[] errorBody(InputStream body)
            throws IOException
    {
        return body.readNBytes(MAX_ERROR_BODY);
    }

    /** The {@code error.message} of an error response ({@link #errorBody}), or the body itself. */
    public static String errorMessage(InputStream body)
            throws IOException
    {
        return errorMessage(new String(errorBody(body), StandardCharsets.UTF_8));
    }

    /** The {@code error.message} of an error body, or the body itself. */
    public static String errorMessage(String body)
    {
        try {
            JsonNode message = JSON.readTree(body).path("error").path("message");
            if (message.isTextual()) {
                return message.asText();
            }
        }
        catch (IOException ignored) {
            // not JSON: show it as it came
        }
        return abbreviate(body);
    }

    /** {@code text} stripped, and cut to 300 characters for a one-line message. */
    public static String abbreviate(String text)
    {
        String stripped = text.strip();
        return stripped.length() <= 300 ? stripped : stripped.substring(0, 300) + "...";
    }

    @Override
    public void close()
    {
        watchdog.shutdownNow();
        client.close();
    }

    /** One stream's state as its events arrive. */
    private static final class Events
    {
        private final long startNanos;
        private int[] ids = new int[0];
        private double ttft = Double.NaN;
        private double[] gaps = new double[16];
        private int gapCount;
        private long previous;
        private JsonNode finishReason;
        private JsonNode error;

        Events(long startNanos)
        {
            this.startNanos = startNanos;
        }

        End read(InputStream in, ChunkListener listener)
                throws IOException
        {
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = reader.readLine()) != null) {
                if (!line.startsWith("data:")) {
                    continue;
                }
                String data = line.substring("data:".length()).strip();
                long now = System.nanoTime();
                if (data.equals("[DONE]")) {
                    return End.DONE;
                }
                JsonNode chunk = JSON.readTree(data);
                if (chunk.has("error")) {
                    error = chunk;
                    return End.ERROR_EVENT;
                }
                tokens(chunk.path("output_ids"), now);
                JsonNode reason = chunk.path("meta_info").path("finish_reason");
                if (!reason.isMissingNode() && !reason.isNull()) {
                    finishReason = reason;
                }
                if (!listener.onChunk(ids, finishReason)) {
                    return End.STOPPED;
                }
            }
            return End.NO_DONE;
        }

        private void tokens(JsonNode array, long now)
        {
            int[] cumulative = new int[array.size()];
            for (int i = 0; i < cumulative.length; i++) {
                cumulative[i] = array.get(i).asInt();
            }
            for (int token = ids.length; token < cumulative.length; token++) {
                if (token == 0) {
                    ttft = (now - startNanos) / 1e6;
                }
                else {
                    if (gapCount == gaps.length) {
                        gaps = Arrays.copyOf(gaps, gaps.length * 2);
                    }
                    // Tokens that arrive together (one chunk, or chunks read at once) are 0 apart: the client saw them so.
                    gaps[gapCount++] = (now - previous) / 1e6;
                }
                previous = now;
            }
            if (cumulative.length >= ids.length) {
                ids = cumulative;
            }
        }

        Streamed result(End end, String failure)
        {
            return new Streamed(ids, ttft, Arrays.copyOf(gaps, gapCount), Optional.ofNullable(finishReason), Optional.ofNullable(error), end, failure);
        }
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
}
