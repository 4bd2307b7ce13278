package io.handoff.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.tokenizer.Tokenizer;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.scheduler.RoomTicket;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/completions}, OpenAI's legacy completions API: one prompt (a string or token ids), {@code max_tokens},
 * the sampling fields of {@link SamplingFields} (OpenAI's and the vLLM/SGLang extensions: {@code top_k},
 * {@code min_tokens}, {@code stop_token_ids}, {@code ignore_eos}...), {@code logprobs} and {@code echo}, {@code stream}
 * (+ {@code stream_options.include_usage}) and SGLang's {@code rid}. {@code created} is when the request arrived.
 * Options it does not implement are accepted only at their neutral value, so a client never silently gets something
 * other than what it asked for.
 */
final class CompletionsApi
{
    private static final Set<String> FIELDS = JsonFields.fieldNames(Set.of("model", "prompt", "max_tokens", "stream", "stream_options", "n",
            "best_of", "echo", "logprobs", "suffix", "user", "rid", "bootstrap_room", "bootstrap_generation", "bootstrap_host"),
            SamplingFields.names(SamplingFields.Spelling.OPENAI), UnusedFields.openAiNames());
    private static final int DEFAULT_MAX_TOKENS = 16;

    private final Generations generations;
    private final ModelConfig model;
    private final InstantSource clock;
    private final Bootstrap bootstrap;
    private final Tokenizer tokenizer;
    private final TokenTexts texts;

    CompletionsApi(Generations generations, ModelConfig model, Tokenizer tokenizer, InstantSource clock, Bootstrap bootstrap)
    {
        this.generations = requireNonNull(generations, "generations is null");
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        this.texts = TokenTexts.of(tokenizer);
        this.bootstrap = requireNonNull(bootstrap, "bootstrap is null");
        this.model = requireNonNull(model, "model is null");
        this.clock = requireNonNull(clock, "clock is null");
    }

    void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        long created = clock.instant().getEpochSecond();
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
        boolean echo = body.bool("echo").orElse(false);
        GenerationParams params = parse(body, exchange);
        if (stream && echo && params.logprobs().isPresent()) {
            throw ApiError.invalid("unsupported", "echo", "echo with logprobs is not streamed (the prompt's log probabilities come with the "
                    + "end of the generation); send \"stream\": false, or leave out echo or logprobs");
        }
        String id = "cmpl-" + params.rid();
        try (Generation generation = generations.start(params)) {
            if (!stream) {
                Generation.Outcome outcome = generation.run(Generation.Sink.NONE);
                if (outcome.failed()) {
                    throw outcome.failure();
                }
                ObjectNode response = JsonFields.openAiEnvelope(id, "text_completion", created, model.name());
                response.putArray("choices").add(choice(outcome, params.options(), echo));
                usage(response, outcome);
                exchange.sendJson(200, response);
                return;
            }
            Exchange.EventStream events = exchange.events();
            ChoiceStream choices = new ChoiceStream(echo ? echoText(params.promptIds()) : "", params.options());
            Generation.Outcome outcome = generation.run(g -> events.send(chunk(id, created, choices.next(g))));
            if (outcome.clientGone()) {
                return;
            }
            if (outcome.failed()) {
                events.send(Exchange.errorBody(outcome.failure()));
            }
            else {
                events.send(chunk(id, created, choices.last(outcome)));
                if (includeUsage) {
                    ObjectNode usage = JsonFields.openAiEnvelope(id, "text_completion", created, model.name());
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
        int[] prompt = prompt(body);
        return generation(body, prompt, "prompt", body.string("rid").orElseGet(generations::newRid), bootstrap.ticket(body, exchange));
    }

    /** One generation of {@code prompt} as the body's per-generation fields (sampling, logprobs, echo) ask for it. */
    private GenerationParams generation(JsonFields body, int[] prompt, String promptField, String rid, Optional<RoomTicket> ticket)
    {
        body.onlyNeutral("suffix", null, "fill-in-the-middle is not supported: the completion only continues the prompt");
        body.string("user");
        UnusedFields.checkOpenAi(body);
        int maxTokens = body.integer("max_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_TOKENS);
        generations.checkContext(prompt.length, promptField, maxTokens, "max_tokens");
        SamplingOptions options = SamplingFields.parse(body, SamplingFields.Spelling.OPENAI, maxTokens, model.vocabSize());
        Optional<LogprobOptions> logprobs = LogprobFields.completions(body, body.bool("echo").orElse(false));
        return new GenerationParams(rid, prompt, bootstrap.maxNewTokens(maxTokens), options, logprobs, ticket);
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

    /** The prompt's text as echo shows it: its tokens decoded (a BOS adds nothing), which is the string a text prompt was. */
    private String echoText(int[] promptIds)
    {
        return tokenizer.decode(promptIds);
    }

    /** {@code choices[0]} of a whole answer: the text (after the prompt's with echo), its log probabilities, the finish reason. */
    ObjectNode choice(Generation.Outcome outcome, SamplingOptions options, boolean echo)
    {
        String prefix = echo ? echoText(outcome.promptIds()) : "";
        ObjectNode choice = choiceNode(prefix + outcome.text());
        outcome.logprobs().ifPresentOrElse(
                trace -> choice.set("logprobs", LogprobJson.completions(trace, outcome.outputIds(), 0, outcome.outputIds().length, echo, 0,
                        this::promptWidth, id -> outputWidth(id, options), texts)),
                () -> choice.putNull("logprobs"));
        finish(choice, outcome);
        return choice;
    }

    private ObjectNode chunk(String id, long created, ObjectNode choice)
    {
        ObjectNode chunk = JsonFields.openAiEnvelope(id, "text_completion", created, model.name());
        chunk.putArray("choices").add(choice);
        return chunk;
    }

    private static ObjectNode choiceNode(String text)
    {
        ObjectNode choice = JsonFields.MAPPER.createObjectNode();
        choice.put("index", 0);
        choice.put("text", text);
        return choice;
    }

    /** The choices of one streamed completion: each chunk carries the text and the tokens' log probabilities since the last. */
    private final class ChoiceStream
    {
        private String prefix;
        private final SamplingOptions options;
        private int sentChars;
        private int sentTokens;
        private int offset;

        ChoiceStream(String echoed, SamplingOptions options)
        {
            this.prefix = echoed;
            this.options = options;
            this.offset = echoed.codePointCount(0, echoed.length());
        }

        ObjectNode next(Generation generation)
        {
            String text = generation.stableText();
            ObjectNode choice = choiceNode(prefix + text.substring(sentChars));
            prefix = "";
            sentChars = text.length();
            int[] ids = generation.outputIds();
            logprobs(choice, generation.logprobsSoFar(), ids);
            choice.putNull("finish_reason");
            return choice;
        }

        ObjectNode last(Generation.Outcome outcome)
        {
            String text = outcome.text();
            ObjectNode choice = choiceNode(prefix + text.substring(Math.min(sentChars, text.length())));
            logprobs(choice, outcome.logprobs(), outcome.outputIds());
            finish(choice, outcome);
            return choice;
        }

        private void logprobs(ObjectNode choice, Optional<LogprobTrace> trace, int[] ids)
        {
            if (trace.isEmpty()) {
                choice.putNull("logprobs");
                return;
            }
            choice.set("logprobs", LogprobJson.completions(trace.get(), ids, sentTokens, ids.length, false, offset, id -> 0,
                    id -> outputWidth(id, options), texts));
            for (int i = sentTokens; i < ids.length; i++) {
                offset += outputWidth(ids[i], options);
            }
            sentTokens = Math.max(sentTokens, ids.length);
        }
    }

    /** A prompt token's characters in the echoed text (a special token has none there). */
    private int promptWidth(int id)
    {
        return width(tokenizer.tokenBytes(id));
    }

    /** An output token's characters in the text, as its options render it. */
    private int outputWidth(int id, SamplingOptions options)
    {
        return width(options.skipSpecialTokens() ? tokenizer.tokenBytes(id) : texts.bytes(id));
    }

    private static int width(byte[] bytes)
    {
        String text = new String(bytes, StandardCharsets.UTF_8);
        return text.codePointCount(0, text.length());
    }

    private static void finish(ObjectNode choice, Generation.Outcome outcome)
    {
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
