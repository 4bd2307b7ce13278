package io.handoff.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * Sends the demo's requests to {@code POST /generate} with {@code stream: true}, greedy and with
 * {@code ignore_eos}, a fixed number in flight, and times every output token as it arrives: time to first
 * token and inter-token latency are what a client sees, transfer and routing included.
 */
public final class StreamingClient
        implements AutoCloseable
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_ERROR_BODY = 2000;

    private final URI generate;
    private final Duration requestTimeout;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("demo-request-timeout").factory());

    public StreamingClient(URI server, Duration requestTimeout)
    {
        this.generate = requireNonNull(server, "server is null").resolve("/generate");
        this.requestTimeout = requireNonNull(requestTimeout, "requestTimeout is null");
    }

    /** The body of one request: greedy, {@code ignore_eos} so every request produces exactly {@code maxNewTokens}. */
    public static ObjectNode body(String prompt, int maxNewTokens)
    {
        ObjectNode body = JSON.createObjectNode();
        body.put("text", prompt);
        body.put("stream", true);
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", maxNewTokens);
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body;
    }

    /** Runs every prompt, {@code concurrency} at a time; the results are in prompt order. */
    public List<RequestResult> run(List<String> prompts, int maxNewTokens, int concurrency)
            throws InterruptedException
    {
        RequestResult[] results = new RequestResult[prompts.size()];
        AtomicInteger next = new AtomicInteger();
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < Math.min(concurrency, prompts.size()); i++) {
            workers.add(Thread.ofVirtual().name("demo-client-" + i).start(() -> {
                for (int index = next.getAndIncrement(); index < prompts.size(); index = next.getAndIncrement()) {
                    results[index] = generate(index, prompts.get(index), maxNewTokens);
                }
            }));
        }
        for (Thread worker : workers) {
            worker.join();
        }
        return List.of(results);
    }

    /** One streamed request; never throws for what the server or the connection did: that is the result's error. */
    public RequestResult generate(int index, String prompt, int maxNewTokens)
    {
        HttpRequest request = HttpRequest.newBuilder(generate)
                .timeout(requestTimeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body(prompt, maxNewTokens).toString()))
                .build();
        long start = System.nanoTime();
        try {
            HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = response.body()) {
                if (response.statusCode() != 200) {
                    String text = new String(in.readNBytes(MAX_ERROR_BODY), StandardCharsets.UTF_8);
                    return RequestResult.failed(index, new int[0], "HTTP " + response.statusCode() + ": " + errorMessage(text));
                }
                AtomicBoolean timedOut = new AtomicBoolean();
                long left = requestTimeout.toNanos() - (System.nanoTime() - start);
                // A stalled stream would block the read forever; closing it from here ends the read.
                ScheduledFuture<?> timeout = watchdog.schedule(() -> {
                    timedOut.set(true);
                    closeQuietly(in);
                }, Math.max(0, left), TimeUnit.NANOSECONDS);
                try {
                    return read(index, in, start, maxNewTokens);
                }
                catch (IOException e) {
                    if (timedOut.get()) {
                        return RequestResult.failed(index, new int[0], "no complete answer within " + requestTimeout.toSeconds() + " s");
                    }
                    throw e;
                }
                finally {
                    timeout.cancel(false);
                }
            }
        }
        catch (IOException e) {
            return RequestResult.failed(index, new int[0], "POST " + generate + " failed: " + e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return RequestResult.failed(index, new int[0], "interrupted");
        }
    }

    /** Reads server-sent events: cumulative {@code output_ids} per chunk, a last chunk with the finish reason, then {@code [DONE]}. */
    public static RequestResult read(int index, InputStream in, long start, int maxNewTokens)
            throws IOException
    {
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        int[] ids = new int[0];
        double ttft = Double.NaN;
        double[] gaps = new double[Math.max(0, maxNewTokens - 1)];
        int gapCount = 0;
        long previous = 0;
        JsonNode finishReason = null;
        String line;
        while ((line = reader.readLine()) != null) {
            if (!line.startsWith("data:")) {
                continue;
            }
            String data = line.substring("data:".length()).strip();
            long now = System.nanoTime();
            if (data.equals("[DONE]")) {
                if (finishReason == null) {
                    return RequestResult.failed(index, ids, "the stream ended ([DONE]) without a finish reason after " + ids.length + " tokens");
                }
                return outcome(index, ids, ttft, Arrays.copyOf(gaps, gapCount), finishReason);
            }
            JsonNode chunk = JSON.readTree(data);
            if (chunk.has("error")) {
                return RequestResult.failed(index, ids, "the server reported an error: " + chunk.path("error").path("message").asText(chunk.get("error").toString()));
            }
            int[] cumulative = ids(chunk.path("output_ids"));
            for (int token = ids.length; token < cumulative.length; token++) {
                if (token == 0) {
                    ttft = (now - start) / 1e6;
                }
                else {
                    if (gapCount == gaps.length) {
                        gaps = Arrays.copyOf(gaps, gaps.length * 2 + 1);
                    }
                    // Tokens that arrive together (one chunk, or chunks read at once) are 0 apart: the client saw them so.
                    gaps[gapCount++] = (now - previous) / 1e6;
                }
                previous = now;
            }
            if (cumulative.length >= ids.length) {
                ids = cumulative;
            }
            JsonNode reason = chunk.path("meta_info").path("finish_reason");
            if (!reason.isMissingNode() && !reason.isNull()) {
                finishReason = reason;
            }
        }
        return RequestResult.failed(index, ids, "the stream ended without [DONE] after " + ids.length + " tokens");
    }

    private static RequestResult outcome(int index, int[] ids, double ttft, double[] gaps, JsonNode finishReason)
    {
        String type = finishReason.path("type").asText("");
        if (type.equals("abort")) {
            return RequestResult.failed(index, ids, "aborted by the server: " + finishReason.path("message").asText("no reason given"));
        }
        return new RequestResult(index, ids, ttft, gaps, Optional.empty());
    }

    private static int[] ids(JsonNode array)
    {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = array.get(i).asInt();
        }
        return ids;
    }

    /** The {@code error.message} of an error body, or the body itself. */
    private static String errorMessage(String body)
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
        return body.strip();
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
