package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.FinishReason;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.handoff.core.scheduler.RoomTicket;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/completions}, a subset of OpenAI's legacy completions API: a prompt (a string or token ids)
 * or a list of them, {@code n} completions per prompt (choices indexed prompt-major; with {@code best_of}, the
 * {@code n} most likely of that many candidates), {@code max_tokens}, {@code temperature}, {@code top_p}, {@code seed}, {@code stop},
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
        OutputCount count = OutputCount.of("/v1/completions", body.copy());
        boolean bestOf = count.perPrompt() > count.returned();
        if (bestOf && stream) {
            throw ApiError.invalid("invalid_value", "best_of", "best_of = " + count.perPrompt() + " > n = " + count.returned()
                    + " cannot be streamed (the best are known only at the end, as OpenAI says): set stream to false, or best_of to n");
        }
        Optional<RoomTicket> ticket = bootstrap.ticket(body, exchange);
        List<GenerationParams> params = new ArrayList<>();
        List<int[]> prompts = prompts(body, count);
        for (int i = 0; i < prompts.size(); i++) {
            // the rids are the group's to give (OutputRids)
            params.add(generation(body, prompts.get(i), count.batched() ? "prompt[" + i + "]" : "prompt", "", ticket));
        }
        OutputRids rids = OutputRids.of(body.raw("rid"), count, generations::newRid);
        String id = "cmpl-" + rids.name();
        try (GenerationGroup group = GenerationGroup.start(generations, bootstrap, params, count, rids)) {
            if (!stream) {
                GenerationGroup.Result result = group.run(GenerationGroup.Sink.NONE);
                if (result.failure().isPresent()) {
                    throw result.failure().get();
                }
                ObjectNode response = envelope(id, "text_completion");
                ArrayNode choices = response.putArray("choices");
                // with best_of, each prompt's n most likely candidates, most likely first; usage counts every candidate
                List<Integer> returned = bestOf ? result.best(count) : java.util.stream.IntStream.range(0, count.total()).boxed().toList();
                for (int i = 0; i < returned.size(); i++) {
                    Generation.Outcome outcome = result.outcomes().get(returned.get(i));
                    choice(choices, i, outcome.text(), outcome);
                }
                usage(response, result.outcomes(), count);
                exchange.sendJson(200, response);
                return;
            }
            Exchange.EventStream events = exchange.events();
            int[] sent = new int[count.total()];
            GenerationGroup.Result result = group.run(new GenerationGroup.Sink()
            {
                @Override
                public void onToken(int index, Generation generation)
                        throws IOException
                {
                    String text = generation.stableText();
                    ObjectNode chunk = envelope(id, "text_completion");
                    choice(chunk.putArray("choices"), index, text.substring(sent[index]), null);
                    sent[index] = text.length();
                    events.send(chunk);
                }

                @Override
                public void onEnd(int index, Generation.Outcome outcome)
                        throws IOException
                {
                    ObjectNode last = envelope(id, "text_completion");
                    choice(last.putArray("choices"), index, outcome.text().substring(Math.min(sent[index], outcome.text().length())), outcome);
                    events.send(last);
                }
            });
            if (result.clientGone()) {
                return;
            }
            if (result.failure().isPresent()) {
                events.send(Exchange.errorBody(result.failure().get()));
            }
            else if (includeUsage) {
                ObjectNode usage = envelope(id, "text_completion");
                usage.putArray("choices");
                usage(usage, result.outcomes(), count);
                events.send(usage);
            }
            events.done();
        }
    }

    /** One generation of {@code prompt} (named {@code promptField} in errors) as the body's per-generation fields ask for it. */
    private GenerationParams generation(JsonFields body, int[] prompt, String promptField, String rid, Optional<RoomTicket> ticket)
    {
        body.onlyNeutral("echo", BooleanNode.FALSE, "the prompt is not echoed");
        body.onlyNeutral("logprobs", null, "log probabilities are not returned");
        body.onlyNeutral("frequency_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
        body.onlyNeutral("presence_penalty", DoubleNode.valueOf(0), "penalties are not implemented");
        body.onlyNeutral("logit_bias", JsonFields.MAPPER.createObjectNode(), "logit bias is not implemented");
        body.onlyNeutral("suffix", null, "suffixes are not implemented");
        body.string("user");
        int maxTokens = body.integer("max_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_TOKENS);
        generations.checkContext(prompt.length, promptField, maxTokens, "max_tokens");
        SamplingParams sampling = new SamplingParams(
                body.number("temperature", 0, false, 2).orElse(1.0).floatValue(),
                body.number("top_p", 0, true, 1).orElse(1.0).floatValue(),
                body.integer("seed", Long.MIN_VALUE, Long.MAX_VALUE).orElse(0L));
        return new GenerationParams(
                rid,
                prompt,
                bootstrap.maxNewTokens(maxTokens),
                sampling,
                body.strings("stop", GenerateApi.MAX_STOP_STRINGS),
                body.intArray("stop_token_ids", 0, model.vocabSize()).map(GenerateApi::boxed).orElse(Set.of()),
                body.bool("ignore_eos").orElse(false),
                ticket);
    }

    /** The prompts: a string (BOS + its bytes, as {@code handoff generate} encodes it) or token ids, or (a batch) a list of either. */
    private List<int[]> prompts(JsonFields body, OutputCount count)
    {
        JsonNode prompt = body.raw("prompt").orElseThrow(() -> ApiError.invalid("missing_field", "prompt", "'prompt' is required"));
        if (!count.batched()) {
            return List.of(prompt("prompt", prompt));
        }
        List<int[]> prompts = new ArrayList<>();
        boolean strings = prompt.get(0).isTextual();
        for (int i = 0; i < prompt.size(); i++) {
            String field = "prompt[" + i + "]";
            JsonNode item = prompt.get(i);
            if (strings ? !item.isTextual() : !item.isArray()) {
                throw ApiError.invalid("invalid_type", field, "a list of prompts holds either strings or arrays of token ids: " + field
                        + " must be " + (strings ? "a string" : "an array of token ids") + " as prompt[0] is, got " + JsonFields.describe(item));
            }
            prompts.add(prompt(field, item));
        }
        return prompts;
    }

    private int[] prompt(String field, JsonNode prompt)
    {
        if (prompt.isTextual()) {
            if (prompt.textValue().isEmpty()) {
                // the tokenizer would still give its start token, and the model would generate from that alone
                throw ApiError.invalid("invalid_value", field, field + " is empty; send the text to continue");
            }
            return tokenizer.encodePrompt(prompt.textValue());
        }
        if (!prompt.isArray()) {
            throw ApiError.invalid("invalid_type", field, field + " must be a string or an array of token ids, got " + JsonFields.describe(prompt));
        }
        return JsonFields.intArray(field, prompt, 0, model.vocabSize());
    }

    private ObjectNode envelope(String id, String object)
    {
        return JsonFields.openAiEnvelope(id, object, created, model.name());
    }

    /** Adds choice {@code index}; {@code outcome} null means the output goes on (a stream chunk). */
    private static void choice(ArrayNode choices, int index, String text, Generation.Outcome outcome)
    {
        ObjectNode choice = choices.addObject();
        choice.put("index", index);
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

    /**
     * The usage of every output: as OpenAI counts it, a prompt's tokens once however many outputs it has (and the
     * cached tokens of its first output), the completion tokens of every output.
     */
    private static void usage(ObjectNode node, List<Generation.Outcome> outcomes, OutputCount count)
    {
        long prompt = 0;
        long cached = 0;
        long completion = 0;
        for (int i = 0; i < outcomes.size(); i++) {
            Generation.Outcome outcome = outcomes.get(i);
            if (i % count.perPrompt() == 0) {
                prompt += outcome.promptTokens();
                cached += outcome.cachedTokens();
            }
            completion += outcome.outputIds().length;
        }
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", prompt);
        usage.put("completion_tokens", completion);
        usage.put("total_tokens", prompt + completion);
        usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
    }
}
