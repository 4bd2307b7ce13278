package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.FinishReason;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /generate}, a subset of SGLang's native API: {@code text} or {@code input_ids},
 * {@code sampling_params}, {@code rid}, {@code stream}. Streaming sends SGLang-style cumulative chunks
 * ({@code text} and {@code output_ids} so far), then a last chunk with the finish reason, then
 * {@code data: [DONE]}.
 */
final class GenerateApi
{
    static final int MAX_STOP_STRINGS = 16;
    private static final Set<String> FIELDS = Set.of("text", "input_ids", "sampling_params", "rid", "stream", "return_logprob",
            "bootstrap_room", "bootstrap_generation", "bootstrap_host");
    private static final Set<String> SAMPLING_FIELDS = Set.of("max_new_tokens", "temperature", "top_p", "seed", "stop", "stop_token_ids",
            "ignore_eos", "n", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "no_stop_trim",
            "skip_special_tokens");
    private static final int DEFAULT_MAX_NEW_TOKENS = 128;

    private final Generations generations;
    private final ModelConfig model;
    private final Bootstrap bootstrap;
    private final Tokenizer tokenizer;

    GenerateApi(Generations generations, ModelConfig model, Tokenizer tokenizer, Bootstrap bootstrap)
    {
        this.generations = requireNonNull(generations, "generations is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.bootstrap = requireNonNull(bootstrap, "bootstrap is null");
        this.model = requireNonNull(model, "model is null");
    }

    void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        JsonFields body = exchange.json();
        boolean stream = body.bool("stream").orElse(false);
        GenerationParams params = parse(body, exchange);
        try (Generation generation = generations.start(params)) {
            if (!stream) {
                Generation.Outcome outcome = generation.run(Generation.Sink.NONE);
                if (outcome.failed()) {
                    throw outcome.failure();
                }
                exchange.sendJson(200, response(outcome));
                return;
            }
            Exchange.EventStream events = exchange.events();
            Generation.Outcome outcome = generation.run(g -> events.send(chunk(g)));
            if (outcome.clientGone()) {
                return;
            }
            events.send(outcome.failed() ? Exchange.errorBody(outcome.failure()) : response(outcome));
            events.done();
        }
    }

    private GenerationParams parse(JsonFields body, Exchange exchange)
    {
        body.allowOnly(FIELDS);
        body.onlyNeutral("return_logprob", BooleanNode.FALSE, "log probabilities are not returned");
        int[] prompt = prompt(body);
        String rid = body.string("rid").orElseGet(generations::newRid);
        JsonFields sampling = body.object("sampling_params").orElse(null);
        int maxNewTokens = DEFAULT_MAX_NEW_TOKENS;
        SamplingParams samplingParams = new SamplingParams(1f, 1f, 0L);
        List<String> stops = List.of();
        Set<Integer> stopIds = Set.of();
        boolean ignoreEos = false;
        if (sampling != null) {
            sampling.allowOnly(SAMPLING_FIELDS);
            sampling.onlyNeutral("n", IntNode.valueOf(1), "one output per request");
            sampling.onlyNeutral("top_k", IntNode.valueOf(-1), "top-k sampling is not implemented");
            sampling.onlyNeutral("min_p", DoubleNode.valueOf(0), "min-p sampling is not implemented");
            sampling.onlyNeutral("frequency_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
            sampling.onlyNeutral("presence_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
            sampling.onlyNeutral("repetition_penalty", DoubleNode.valueOf(1), "penalties are not implemented");
            sampling.onlyNeutral("no_stop_trim", BooleanNode.FALSE, "the text always ends before a stop string");
            sampling.onlyNeutral("skip_special_tokens", BooleanNode.TRUE, "special tokens have no text");
            maxNewTokens = sampling.integer("max_new_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_NEW_TOKENS);
            samplingParams = new SamplingParams(
                    sampling.number("temperature", 0, false, 100).orElse(1.0).floatValue(),
                    sampling.number("top_p", 0, true, 1).orElse(1.0).floatValue(),
                    sampling.integer("seed", Long.MIN_VALUE, Long.MAX_VALUE).orElse(0L));
            stops = sampling.strings("stop", MAX_STOP_STRINGS);
            stopIds = sampling.intArray("stop_token_ids", 0, model.vocabSize()).map(GenerateApi::boxed).orElse(Set.of());
            ignoreEos = sampling.bool("ignore_eos").orElse(false);
        }
        generations.checkContext(prompt.length, body.has("text") ? "text" : "input_ids", maxNewTokens, "sampling_params.max_new_tokens");
        return new GenerationParams(rid, prompt, bootstrap.maxNewTokens(maxNewTokens), samplingParams, stops, stopIds, ignoreEos,
                bootstrap.ticket(body, exchange));
    }

    private int[] prompt(JsonFields body)
    {
        if (body.has("text") == body.has("input_ids")) {
            throw ApiError.invalid("missing_field", body.has("text") ? "input_ids" : "text",
                    "give the prompt as either 'text' or 'input_ids' (exactly one of them)");
        }
        if (body.raw("text").map(value -> value.isArray()).orElse(false)
                || body.raw("input_ids").map(value -> value.isArray() && value.size() > 0 && value.get(0).isArray()).orElse(false)) {
            throw ApiError.invalid("unsupported", body.has("text") ? "text" : "input_ids",
                    "batched prompts are not supported: send one prompt per request");
        }
        if (body.has("text")) {
            String text = body.string("text").orElseThrow();
            if (text.isEmpty()) {
                // the tokenizer would still give its start token, and the model would generate from that alone
                throw ApiError.invalid("invalid_value", "text", "text is empty; send the prompt to continue");
            }
            return tokenizer.encodePrompt(text);
        }
        return body.intArray("input_ids", 0, model.vocabSize()).orElseThrow();
    }

    static Set<Integer> boxed(int[] ids)
    {
        Set<Integer> set = new HashSet<>();
        for (int id : ids) {
            set.add(id);
        }
        return set;
    }

    private static ObjectNode chunk(Generation generation)
    {
        ObjectNode chunk = JsonFields.MAPPER.createObjectNode();
        chunk.put("text", generation.stableText());
        ArrayNode ids = chunk.putArray("output_ids");
        int[] outputIds = generation.outputIds();
        for (int id : outputIds) {
            ids.add(id);
        }
        ObjectNode meta = chunk.putObject("meta_info");
        meta.put("id", generation.rid());
        meta.putNull("finish_reason");
        meta.put("prompt_tokens", generation.params().promptIds().length);
        meta.put("completion_tokens", outputIds.length);
        return chunk;
    }

    private static ObjectNode response(Generation.Outcome outcome)
    {
        ObjectNode response = JsonFields.MAPPER.createObjectNode();
        response.put("text", outcome.text());
        ArrayNode ids = response.putArray("output_ids");
        for (int id : outcome.outputIds()) {
            ids.add(id);
        }
        ObjectNode meta = response.putObject("meta_info");
        meta.put("id", outcome.rid());
        meta.set("finish_reason", finishReason(outcome));
        meta.put("prompt_tokens", outcome.promptTokens());
        meta.put("completion_tokens", outcome.outputIds().length);
        meta.put("cached_tokens", outcome.cachedTokens());
        meta.put("queue_time", outcome.queueNanos() / 1e9);
        meta.put("ttft", outcome.firstTokenNanos() / 1e9);
        meta.put("e2e_latency", outcome.totalNanos() / 1e9);
        return response;
    }

    /** SGLang's shape: {@code {"type": "length", "length": n}}, {@code {"type": "stop", "matched": ...}}, {@code {"type": "abort", ...}}. */
    private static ObjectNode finishReason(Generation.Outcome outcome)
    {
        ObjectNode reason = JsonFields.MAPPER.createObjectNode();
        switch (outcome.reason()) {
            case LENGTH -> reason.put("type", "length").put("length", outcome.outputIds().length);
            case STOP -> {
                reason.put("type", "stop");
                switch (outcome.match().orElse(null)) {
                    case OutputText.StopString stop -> reason.put("matched", stop.stop());
                    case OutputText.StopToken token -> reason.put("matched", token.id());
                    case null -> reason.putNull("matched");
                }
            }
            case ABORT -> reason.put("type", "abort").put("message", outcome.clientGone() ? "the client disconnected" : "aborted");
            case ERROR -> reason.put("type", "abort").put("message", outcome.error().orElse("error"));
        }
        return reason;
    }
}
