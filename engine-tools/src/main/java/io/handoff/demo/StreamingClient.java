package io.handoff.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.client.GenerateClient;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * Sends the demo's requests to {@code POST /generate} with {@code stream: true}, greedy and with
 * {@code ignore_eos}, a fixed number in flight, through the tools' {@link GenerateClient}, which times every output
 * token as it arrives: time to first token and inter-token latency are what a client sees, transfer and routing included.
 */
public final class StreamingClient
        implements AutoCloseable
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private final GenerateClient client;
    private final Duration requestTimeout;

    public StreamingClient(URI server, Duration requestTimeout)
    {
        this.client = new GenerateClient(requireNonNull(server, "server is null"), "demo-request-timeout");
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
        long start = System.nanoTime();
        URI generate = client.base().resolve("/generate");
        try {
            HttpResponse<InputStream> response = client.post("/generate", body(prompt, maxNewTokens)).get(requestTimeout.toNanos(), TimeUnit.NANOSECONDS);
            try (InputStream in = response.body()) {
                if (response.statusCode() != 200) {
                    return RequestResult.failed(index, new int[0], "HTTP " + response.statusCode() + ": " + GenerateClient.errorMessage(in));
                }
                return result(index, client.read(in, start, start + requestTimeout.toNanos(), GenerateClient.ChunkListener.READ_ALL), requestTimeout);
            }
        }
        catch (TimeoutException e) {
            return RequestResult.failed(index, new int[0], "no response within " + requestTimeout.toSeconds() + " s");
        }
        catch (ExecutionException e) {
            return RequestResult.failed(index, new int[0], "POST " + generate + " failed: " + e.getCause());
        }
        catch (IOException e) {
            return RequestResult.failed(index, new int[0], "POST " + generate + " failed: " + e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return RequestResult.failed(index, new int[0], "interrupted");
        }
    }

    /** A stream as the demo counts it: complete, with a finish reason that is not an abort, or failed saying why. */
    public static RequestResult result(int index, GenerateClient.Streamed stream, Duration requestTimeout)
    {
        int[] ids = stream.outputIds();
        return switch (stream.end()) {
            case DONE -> {
                if (stream.finishReason().isEmpty()) {
                    yield RequestResult.failed(index, ids, "the stream ended ([DONE]) without a finish reason after " + ids.length + " tokens");
                }
                if (stream.abortedByServer()) {
                    String message = stream.serverMessage();
                    yield RequestResult.failed(index, ids, "aborted by the server: " + (message.isEmpty() ? "no reason given" : message));
                }
                yield new RequestResult(index, ids, stream.ttftMillis(), stream.interTokenMillis(), Optional.empty());
            }
            case ERROR_EVENT -> RequestResult.failed(index, ids, "the server reported an error: " + stream.serverMessage());
            case NO_DONE, STOPPED -> RequestResult.failed(index, ids, "the stream ended without [DONE] after " + ids.length + " tokens");
            case TIMED_OUT -> RequestResult.failed(index, ids, "no complete answer within " + requestTimeout.toSeconds() + " s");
            case BROKEN -> RequestResult.failed(index, ids, "the stream broke: " + stream.failure());
        };
    }

    @Override
    public void close()
    {
        client.close();
    }
}
