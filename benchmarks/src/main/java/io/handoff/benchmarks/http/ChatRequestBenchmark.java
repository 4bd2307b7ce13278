package io.handoff.benchmarks.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.base.JsonFields;
import io.handoff.http.chat.ChatRequest;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * A {@code /v1/chat/completions} body read as the server reads it: the JSON tree (the API's own mapper, with its
 * nesting bound), a copy of it, and the request's validation ({@link ChatRequest#parse}). The reference is the JSON
 * parse alone, so the ratio is what the copy and the field checks add.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class ChatRequestBenchmark
{
    private static final int MAX_CONTEXT = 32_768;

    /** Characters of the user's message: a question, a long document pasted in. */
    @Param({"64", "16384"})
    public int contentChars;

    private byte[] body;

    @Setup
    public void setUp()
    {
        String sentence = "Summarise the following text in three sentences. ";
        String content = sentence.repeat(contentChars / sentence.length() + 1).substring(0, contentChars);
        ObjectNode request = JsonFields.MAPPER.createObjectNode()
                .put("model", "tiny-gqa")
                .put("max_tokens", 128)
                .put("temperature", 0.7)
                .put("stream", true);
        request.putArray("messages")
                .add(JsonFields.MAPPER.createObjectNode().put("role", "system").put("content", "You are a helpful assistant."))
                .add(JsonFields.MAPPER.createObjectNode().put("role", "user").put("content", content));
        request.putArray("stop").add("\n\nUser:");
        body = request.toString().getBytes(StandardCharsets.UTF_8);
    }

    @Benchmark
    public ChatRequest parseAndValidate()
            throws IOException
    {
        ObjectNode tree = (ObjectNode) JsonFields.MAPPER.readTree(body);
        return ChatRequest.parse(tree.deepCopy(), MAX_CONTEXT);
    }

    @Benchmark
    public JsonNode jsonParseReference()
            throws IOException
    {
        return JsonFields.MAPPER.readTree(body);
    }
}
