package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.output.Generation;
import io.handoff.core.output.GenerationGroup;
import io.handoff.core.output.GenerationParams;
import io.handoff.core.output.LogprobOptions;
import io.handoff.core.output.OutputText;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.OutputCount;
import io.handoff.http.base.UnusedFields;
import io.handoff.http.fields.LogprobFields;
import io.handoff.http.fields.LogprobJson;
import io.handoff.http.fields.SamplingFields;
import io.handoff.http.fields.TokenTexts;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /generate}, SGLang's native API: {@code text} or {@code input_ids}, {@code sampling_params}
 * ({@link SamplingFields}), {@code rid}, {@code stream}, and the log probabilities ({@link LogprobFields#sglang}) in
 * {@code meta_info}. Streaming sends SGLang-style cumulative chunks ({@code text}, {@code output_ids} and the log
 * probabilities so far: the prompt's from the first chunk on, the output's), then a last chunk with the finish reason,
 * then {@code data: [DONE]}. Fields of features this engine lacks are accepted only when they ask for nothing ({@link UnusedFields}).
 *
 * <p>Several outputs (a list of prompts, {@code sampling_params.n > 1}, both) answer as a list in SGLang's order
 * (prompt-major), run as one {@link GenerationGroup}; their stream's events carry the output's place in that list
 * as {@code index}, and {@code data: [DONE]} comes once, after all. {@code rid} may be a list, one per prompt.
 */
final class GenerateApi
{
    private static final Set<String> FIELDS = JsonFields.fieldNames(Set.of("text", "input_ids", "sampling_params", "rid", "stream",
            "stream_options", "bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local"), LogprobFields.SGLANG, UnusedFields.generateNames());
    private static final Set<String> SAMPLING_FIELDS = JsonFields.fieldNames(Set.of("max_new_tokens", "n"),
            SamplingFields.names(SamplingFields.Spelling.SGLANG));
    private static final int DEFAULT_MAX_NEW_TOKENS = 128;

    private final Generations generations;
    private final ModelConfig model;
    private final Bootstrap bootstrap;
    private final Tokenizer tokenizer;
    private final TokenTexts texts;

    GenerateApi(Generations generations, ModelConfig model, Tokenizer tokenizer, Bootstrap bootstrap)
    {
        this.generations = requireNonNull(generations, "generations is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.texts = TokenTexts.of(tokenizer);
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
        try (GenerationGroup group = generations.startGroup(bootstrap, params, count, rids)) {
            if (!stream) {
                GenerationGroup.Result result = group.run(GenerationGroup.Sink.NONE);
                if (result.failure().isPresent()) {
                    throw Generations.failure(result.failure().get());
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
                events.send(Exchange.errorBody(Generations.failure(result.failure().get())));
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
        UnusedFields.checkGenerate(body);
        body.object("stream_options").ifPresent(options -> {
            // meta_info carries the usage in every chunk, so both are always satisfied
            options.allowOnly(Set.of("include_usage", "continuous_usage_stats"));
            options.bool("include_usage");
            options.bool("continuous_usage_stats");
        });
        Optional<LogprobOptions> logprobs = LogprobFields.sglang(body, prompt.length);
        JsonFields sampling = body.object("sampling_params").orElse(JsonFields.of(JsonFields.MAPPER.createObjectNode()));
        sampling.allowOnly(SAMPLING_FIELDS);
        // n is counted with the prompts (OutputCount): each of a prompt's outputs is one generation
        int maxNewTokens = sampling.integer("max_new_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_NEW_TOKENS);
        generations.checkContext(prompt.length, promptField, maxNewTokens, "sampling_params.max_new_tokens");
        SamplingOptions options = SamplingFields.parse(sampling, SamplingFields.Spelling.SGLANG, maxNewTokens, model.vocabSize());
        return new GenerationParams(rid, prompt, bootstrap.maxNewTokens(maxNewTokens), options, logprobs, ticket);
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

    private ObjectNode chunk(Generation generation)
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
        generation.logprobsSoFar().ifPresent(trace -> LogprobJson.sglang(meta, trace, outputIds, outputIds.length, texts));
        return chunk;
    }

    /** The whole answer for one outcome: its text, ids and {@code meta_info} (with the log probabilities asked for). */
    ObjectNode response(Generation.Outcome outcome)
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
        outcome.logprobs().ifPresent(trace -> LogprobJson.sglang(meta, trace, outcome.outputIds(), outcome.outputIds().length, texts));
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
