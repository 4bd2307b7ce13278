package io.handoff.bench.serving;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.client.GenerateClient;
import io.handoff.demo.RequestResult;
import io.handoff.demo.StreamingClient;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * One server's or router's {@code POST /generate} with {@code input_ids}, streamed, greedy and with {@code ignore_eos},
 * timed at the client by the tools' {@link GenerateClient}, which times every token as it arrives. Also reads
 * {@code GET /v1/models} for the vocabulary and context size. Never throws for what the server or the connection did
 * with a request: that is the sample's status and error.
 */
public final class ServingClient
        implements AutoCloseable
{
    /** What the served model admits: prompt ids below {@code vocabSize}, prompt and output within {@code maxContext}. */
    public record ModelInfo(String id, int vocabSize, int maxContext, boolean vocabReported) {}

    // ids below this are valid for every model Handoff serves (the presets have 259, real vocabularies tens of thousands)
    static final int SAFE_VOCAB = 256;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final URI base;
    private final Duration requestTimeout;
    private final GenerateClient client;

    public ServingClient(URI base, Duration requestTimeout)
    {
        this.base = requireNonNull(base, "base is null");
        this.requestTimeout = requireNonNull(requestTimeout, "requestTimeout is null");
        this.client = new GenerateClient(base, "bench-serving-timeout");
    }

    public URI base()
    {
        return base;
    }

    /** The served model; an {@link IllegalStateException} saying what to check when the URL does not answer as a Handoff server. */
    public ModelInfo model()
            throws InterruptedException
    {
        HttpResponse<String> response;
        try {
            response = client.get("/v1/models", Duration.ofSeconds(30));
        }
        catch (ConnectException | HttpConnectTimeoutException e) {
            throw new IllegalStateException(base + ": cannot connect (" + (e.getMessage() != null ? e.getMessage() : "refused")
                    + "); is a handoff server or router listening there? Check --url/--compare-url");
        }
        catch (IOException e) {
            throw new IllegalStateException(base + ": GET /v1/models failed: " + e + "; check --url/--compare-url");
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException(base + ": GET /v1/models answered HTTP " + response.statusCode() + ": "
                    + GenerateClient.abbreviate(response.body()) + "; is this a handoff server or router (and healthy)?");
        }
        JsonNode model;
        try {
            model = JSON.readTree(response.body()).path("data").path(0);
        }
        catch (IOException e) {
            throw new IllegalStateException(base + ": GET /v1/models answered something that is not JSON: " + GenerateClient.abbreviate(response.body()));
        }
        if (!model.path("id").isTextual() || !model.path("max_model_len").canConvertToInt()) {
            throw new IllegalStateException(base + ": GET /v1/models names no model with 'id' and 'max_model_len': " + GenerateClient.abbreviate(response.body()));
        }
        boolean reported = model.path("vocab_size").canConvertToInt() && model.path("vocab_size").asInt() > 0;
        return new ModelInfo(model.get("id").asText(), reported ? model.get("vocab_size").asInt() : SAFE_VOCAB, model.get("max_model_len").asInt(),
                reported);
    }

    /** The body of one request. */
    static ObjectNode body(BenchRequest request, String rid)
    {
        ObjectNode body = JSON.createObjectNode();
        body.put("rid", rid);
        body.put("stream", true);
        body.putArray("input_ids").addAll(Arrays.stream(request.inputIds()).mapToObj(JSON.getNodeFactory()::numberNode).toList());
        ObjectNode sampling = body.putObject("sampling_params");
        sampling.put("max_new_tokens", request.maxNewTokens());
        sampling.put("temperature", 0);
        sampling.put("ignore_eos", true);
        return body;
    }

    public Sample generate(BenchRequest request, String rid)
    {
        long start = System.nanoTime();
        int inputs = request.inputIds().length;
        try {
            HttpResponse<InputStream> response = client.post("/generate", body(request, rid)).get(requestTimeout.toNanos(), TimeUnit.NANOSECONDS);
            try (InputStream in = response.body()) {
                if (response.statusCode() != 200) {
                    return failed(request, rid, response.statusCode(), GenerateClient.errorMessage(in), start);
                }
                GenerateClient.Streamed stream = client.read(in, start, start + requestTimeout.toNanos(), GenerateClient.ChunkListener.READ_ALL);
                RequestResult result = StreamingClient.result(request.index(), stream, requestTimeout);
                double e2e = (System.nanoTime() - start) / 1e6;
                Optional<String> error = result.error().or(() -> result.outputIds().length == request.maxNewTokens() ? Optional.empty()
                        : Optional.of("produced " + result.outputIds().length + " tokens, not the " + request.maxNewTokens() + " asked for with ignore_eos"));
                return new Sample(request.index(), rid, inputs, 200, result.outputIds(), error.isEmpty() ? result.ttftMillis() : Double.NaN,
                        error.isEmpty() ? result.interTokenMillis() : new double[0], e2e, error);
            }
        }
        catch (TimeoutException e) {
            return failed(request, rid, 0, "no response within " + requestTimeout.toSeconds() + " s", start);
        }
        catch (ExecutionException e) {
            return failed(request, rid, 0, "POST " + base.resolve("/generate") + " failed: " + e.getCause(), start);
        }
        catch (IOException e) {
            return failed(request, rid, 0, "POST " + base.resolve("/generate") + " failed: " + e, start);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return failed(request, rid, 0, "interrupted", start);
        }
    }

    private static Sample failed(BenchRequest request, String rid, int status, String error, long start)
    {
        return new Sample(request.index(), rid, request.inputIds().length, status, new int[0], Double.NaN, new double[0],
                (System.nanoTime() - start) / 1e6, Optional.of(error));
    }

    @Override
    public void close()
    {
        client.close();
    }
}
