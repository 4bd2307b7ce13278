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

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.core.scheduler.RoomTicket;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /generate}, a subset of SGLang's native API: {@code text} or {@code input_ids} (one prompt, or a
 * list of them), {@code sampling_params} (with {@code n} outputs per prompt), {@code rid} (a string, or a list with
 * one per prompt), {@code stream}. Streaming sends SGLang-style cumulative chunks ({@code text} and
 * {@code output_ids} so far), then a last chunk with the finish reason, then {@code data: [DONE]}. Several outputs
 * (a batch or {@code n > 1}) answer as a list in SGLang's order (prompt-major); their stream's events carry the
 * output's place in that list as {@code index}, and {@code data: [DONE]} comes once, after all.
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
        body.allowOnly(FIELDS);
        OutputCount count = OutputCount.of("/generate", body.copy());
        List<Prompt> prompts = prompts(body, count);
        Optional<RoomTicket> ticket = bootstrap.ticket(body, exchange);
        List<GenerationParams> params = new ArrayList<>();
        for (Prompt prompt : prompts) {
            // the rids are the group's to give (OutputRids)
            params.add(generation(body, prompt.ids(), prompt.field(), "", ticket));
        }
        OutputRids rids = OutputRids.of(body.raw("rid"), count, generations::newRid);
        try (GenerationGroup group = GenerationGroup.start(generations, bootstrap, params, count, rids)) {
            if (!stream) {
                GenerationGroup.Result result = group.run(GenerationGroup.Sink.NONE);
                if (result.failure().isPresent()) {
                    throw result.failure().get();
                }
                if (count.single()) {
                    exchange.sendJson(200, response(result.outcomes().getFirst()));
                    return;
                }
                ArrayNode list = JsonFields.MAPPER.createArrayNode();
                result.outcomes().forEach(outcome -> list.add(response(outcome)));
                exchange.sendJson(200, list);
                return;
            }
            Exchange.EventStream events = exchange.events();
            GenerationGroup.Result result = group.run(new GenerationGroup.Sink()
            {
                @Override
                public void onToken(int index, Generation generation)
                        throws IOException
                {
                    events.send(indexed(chunk(generation), index, count));
                }

                @Override
                public void onEnd(int index, Generation.Outcome outcome)
                        throws IOException
                {
                    events.send(indexed(response(outcome), index, count));
                }
            });
            if (result.clientGone()) {
                return;
            }
            if (result.failure().isPresent()) {
                events.send(Exchange.errorBody(result.failure().get()));
            }
            events.done();
        }
    }

    /** SGLang marks each event of a batch's stream with the output's place in the answer's list. */
    private static ObjectNode indexed(ObjectNode event, int index, OutputCount count)
    {
        if (!count.single()) {
            event.put("index", index);
        }
        return event;
    }

    /** One prompt of the request, and the field that names it in an error. */
    private record Prompt(int[] ids, String field) {}

    /** One generation of {@code prompt} as the body's per-generation fields (sampling, logprobs) ask for it. */
    private GenerationParams generation(JsonFields body, int[] prompt, String promptField, String rid, Optional<RoomTicket> ticket)
    {
        body.onlyNeutral("return_logprob", BooleanNode.FALSE, "log probabilities are not returned");
        JsonFields sampling = body.object("sampling_params").orElse(null);
        int maxNewTokens = DEFAULT_MAX_NEW_TOKENS;
        SamplingParams samplingParams = new SamplingParams(1f, 1f, 0L);
        List<String> stops = List.of();
        Set<Integer> stopIds = Set.of();
        boolean ignoreEos = false;
        if (sampling != null) {
            sampling.allowOnly(SAMPLING_FIELDS);
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
        generations.checkContext(prompt.length, promptField, maxNewTokens, "sampling_params.max_new_tokens");
        return new GenerationParams(rid, prompt, bootstrap.maxNewTokens(maxNewTokens), samplingParams, stops, stopIds, ignoreEos, ticket);
    }

    /** The prompts: {@code text} or {@code input_ids}, one or (as {@code count} found) a list of them. */
    private List<Prompt> prompts(JsonFields body, OutputCount count)
    {
        if (body.has("text") == body.has("input_ids")) {
            throw ApiError.invalid("missing_field", body.has("text") ? "input_ids" : "text",
                    "give the prompt as either 'text' or 'input_ids' (exactly one of them)");
        }
        String name = body.has("text") ? "text" : "input_ids";
        if (!count.batched()) {
            return List.of(new Prompt(name.equals("text") ? text(name, body.string("text").orElseThrow())
                    : body.intArray("input_ids", 0, model.vocabSize()).orElseThrow(), name));
        }
        JsonNode list = body.raw(name).orElseThrow();
        List<Prompt> prompts = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            String field = name + "[" + i + "]";
            JsonNode item = list.get(i);
            if (name.equals("text")) {
                if (!item.isTextual()) {
                    throw ApiError.invalid("invalid_type", field, field + " must be a string, got " + JsonFields.describe(item));
                }
                prompts.add(new Prompt(text(field, item.textValue()), field));
            }
            else {
                if (!item.isArray()) {
                    throw ApiError.invalid("invalid_type", field, field + " must be an array of token ids, got " + JsonFields.describe(item));
                }
                prompts.add(new Prompt(JsonFields.intArray(field, item, 0, model.vocabSize()), field));
            }
        }
        return prompts;
    }

    private int[] text(String field, String text)
    {
        if (text.isEmpty()) {
            // the tokenizer would still give its start token, and the model would generate from that alone
            throw ApiError.invalid("invalid_value", field, field + " is empty; send the prompt to continue");
        }
        return tokenizer.encodePrompt(text);
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
