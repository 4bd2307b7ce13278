package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.FinishReason;

import java.io.IOException;
import java.util.Locale;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/completions}, a subset of OpenAI's legacy completions API: one prompt (a string or
 * token ids), {@code max_tokens}, {@code temperature}, {@code top_p}, {@code seed}, {@code stop},
 * {@code stream} (+ {@code stream_options.include_usage}), and SGLang's extensions {@code ignore_eos},
 * {@code stop_token_ids} and {@code rid}. Options it does not implement are accepted only at their
 * neutral value, so a client never silently gets something other than what it asked for.
 */
final class CompletionsApi
{
    private static final Set<String> FIELDS = Set.of("model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream",
            "stream_options", "n", "best_of", "echo", "logprobs", "frequency_penalty", "presence_penalty", "logit_bias", "suffix", "user",
            "ignore_eos", "stop_token_ids", "rid", "bootstrap_room", "bootstrap_generation", "bootstrap_host");
    private static final int DEFAULT_MAX_TOKENS = 16;

    private final Generations generations;
    private final ModelConfig model;
    private final long created;
    private final Bootstrap bootstrap;
    private final Tokenizer tokenizer;

    CompletionsApi(Generations generations, ModelConfig model, Tokenizer tokenizer, long createdEpochSeconds, Bootstrap bootstrap)
    {
        this.generations = requireNonNull(generations, "generations is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.bootstrap = requireNonNull(bootstrap, "bootstrap is null");
        this.model = requireNonNull(model, "model is null");
        this.created = createdEpochSeconds;
    }

    void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        JsonFields body = exchange.json();
        body.allowOnly(FIELDS);
        body.string("model").ifPresent(name -> {
            if (!name.equals(model.name())) {
                throw ApiError.notFound("model_not_found", "model", "model '" + name + "' is not served here; this server serves '"
                        + model.name() + "' (GET /v1/models)");
            }
        });
        boolean stream = body.bool("stream").orElse(false);
        boolean includeUsage = false;
        if (body.has("stream_options")) {
            JsonFields options = body.object("stream_options").orElseThrow();
            options.allowOnly(Set.of("include_usage"));
            includeUsage = options.bool("include_usage").orElse(false);
        }
        GenerationParams params = parse(body, exchange);
        String id = "cmpl-" + params.rid();
        try (Generation generation = generations.start(params)) {
            if (!stream) {
                Generation.Outcome outcome = generation.run(Generation.Sink.NONE);
                if (outcome.failed()) {
                    throw outcome.failure();
                }
                ObjectNode response = envelope(id, "text_completion");
                choice(response, outcome.text(), outcome);
                usage(response, outcome);
                exchange.sendJson(200, response);
                return;
            }
            Exchange.EventStream events = exchange.events();
            int[] sent = {0};
            Generation.Outcome outcome = generation.run(g -> {
                String text = g.stableText();
                ObjectNode chunk = envelope(id, "text_completion");
                choice(chunk, text.substring(sent[0]), null);
                sent[0] = text.length();
                events.send(chunk);
            });
            if (outcome.clientGone()) {
                return;
            }
            if (outcome.failed()) {
                events.send(Exchange.errorBody(outcome.failure()));
            }
            else {
                ObjectNode last = envelope(id, "text_completion");
                choice(last, outcome.text().substring(Math.min(sent[0], outcome.text().length())), outcome);
                events.send(last);
                if (includeUsage) {
                    ObjectNode usage = envelope(id, "text_completion");
                    usage.putArray("choices");
                    usage(usage, outcome);
                    events.send(usage);
                }
            }
            events.done();
        }
    }

    private GenerationParams parse(JsonFields body, Exchange exchange)
    {
        body.onlyNeutral("n", IntNode.valueOf(1), "one completion per request");
        body.onlyNeutral("best_of", IntNode.valueOf(1), "one completion per request");
        body.onlyNeutral("echo", BooleanNode.FALSE, "the prompt is not echoed");
        body.onlyNeutral("logprobs", null, "log probabilities are not returned");
        body.onlyNeutral("frequency_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
        body.onlyNeutral("presence_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
        body.onlyNeutral("logit_bias", JsonFields.MAPPER.createObjectNode(), "logit bias is not implemented");
        body.onlyNeutral("suffix", null, "suffixes are not implemented");
        body.string("user");
        int[] prompt = prompt(body);
        int maxTokens = body.integer("max_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_TOKENS);
        generations.checkContext(prompt.length, "prompt", maxTokens, "max_tokens");
        SamplingParams sampling = new SamplingParams(
                body.number("temperature", 0, false, 2).orElse(1.0).floatValue(),
                body.number("top_p", 0, true, 1).orElse(1.0).floatValue(),
                body.integer("seed", Long.MIN_VALUE, Long.MAX_VALUE).orElse(0L));
        return new GenerationParams(
                body.string("rid").orElseGet(generations::newRid),
                prompt,
                bootstrap.maxNewTokens(maxTokens),
                sampling,
                body.strings("stop", GenerateApi.MAX_STOP_STRINGS),
                body.intArray("stop_token_ids", 0, model.vocabSize()).map(GenerateApi::boxed).orElse(Set.of()),
                body.bool("ignore_eos").orElse(false),
                bootstrap.ticket(body, exchange));
    }

    /** A string (BOS + its bytes, as {@code handoff generate} encodes it) or token ids; a list of one of either. */
    private int[] prompt(JsonFields body)
    {
        JsonNode prompt = body.raw("prompt").orElseThrow(() -> ApiError.invalid("missing_field", "prompt", "'prompt' is required"));
        if (prompt.isArray() && prompt.size() == 1 && (prompt.get(0).isTextual() || prompt.get(0).isArray())) {
            prompt = prompt.get(0);
        }
        if (prompt.isTextual()) {
            if (prompt.textValue().isEmpty()) {
                // the tokenizer would still give its start token, and the model would generate from that alone
                throw ApiError.invalid("invalid_value", "prompt", "prompt is empty; send the text to continue");
            }
            return tokenizer.encodePrompt(prompt.textValue());
        }
        if (prompt.isArray() && prompt.size() > 0 && (prompt.get(0).isTextual() || prompt.get(0).isArray())) {
            throw ApiError.invalid("unsupported", "prompt", "batched prompts are not supported: send one prompt per request");
        }
        if (!prompt.isArray()) {
            throw ApiError.invalid("invalid_type", "prompt", "prompt must be a string or an array of token ids, got " + JsonFields.describe(prompt));
        }
        return JsonFields.intArray("prompt", prompt, 0, model.vocabSize());
    }

    private ObjectNode envelope(String id, String object)
    {
        return JsonFields.openAiEnvelope(id, object, created, model.name());
    }

    /** Adds {@code choices[0]}; {@code outcome} null means the output goes on (a stream chunk). */
    private static void choice(ObjectNode node, String text, Generation.Outcome outcome)
    {
        ObjectNode choice = node.putArray("choices").addObject();
        choice.put("index", 0);
        choice.put("text", text);
        choice.putNull("logprobs");
        if (outcome == null) {
            choice.putNull("finish_reason");
            return;
        }
        choice.put("finish_reason", outcome.reason().name().toLowerCase(Locale.ROOT));
        switch (outcome.match().orElse(null)) {
            case OutputText.StopString stop -> choice.put("stop_reason", stop.stop());
            case OutputText.StopToken token -> choice.put("stop_reason", token.id());
            case null -> choice.putNull("stop_reason");
        }
    }

    private static void usage(ObjectNode node, Generation.Outcome outcome)
    {
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", outcome.promptTokens());
        usage.put("completion_tokens", outcome.outputIds().length);
        usage.put("total_tokens", outcome.promptTokens() + outcome.outputIds().length);
        usage.putObject("prompt_tokens_details").put("cached_tokens", outcome.cachedTokens());
    }
}
