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
import io.handoff.core.output.LogprobTrace;
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
import io.handoff.http.fields.ResponseFormats;
import io.handoff.http.fields.SamplingFields;
import io.handoff.http.fields.TokenTexts;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/completions}, OpenAI's legacy completions API: a prompt (a string or token ids) or a list of them,
 * {@code n} completions per prompt (choices indexed prompt-major; with {@code best_of}, the {@code n} most likely of that
 * many candidates), {@code max_tokens},
 * the sampling fields of {@link SamplingFields} (OpenAI's and the vLLM/SGLang extensions: {@code top_k},
 * {@code min_tokens}, {@code stop_token_ids}, {@code ignore_eos}...), {@code logprobs} and {@code echo}, {@code stream}
 * (+ {@code stream_options.include_usage}) and SGLang's {@code rid}. {@code created} is when the request arrived.
 * Options it does not implement are accepted only at their neutral value, so a client never silently gets something
 * other than what it asked for.
 */
final class CompletionsApi
{
    private static final Set<String> FIELDS = JsonFields.fieldNames(Set.of("model", "prompt", "max_tokens", "stream", "stream_options", "n",
            "best_of", "echo", "logprobs", "suffix", "user", "response_format", "rid", "bootstrap_room", "bootstrap_generation", "bootstrap_host", "bootstrap_local"),
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
        OutputCount count = OutputCount.of("/v1/completions", body.copy());
        boolean bestOf = count.perPrompt() > count.returned();
        if (bestOf && stream) {
            throw ApiError.invalid("invalid_value", "best_of", "best_of = " + count.perPrompt() + " > n = " + count.returned()
                    + " cannot be streamed (the best are known only at the end, as OpenAI says): set stream to false, or best_of to n");
        }
        Optional<RoomTicket> ticket = bootstrap.ticket(body, exchange);
        List<int[]> prompts = prompts(body, count);
        List<GenerationParams> params = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            // the rids are the group's to give (OutputRids)
            params.add(generation(body, prompts.get(i), count.batched() ? "prompt[" + i + "]" : "prompt", "", ticket));
        }
        OutputRids rids = OutputRids.of(body.raw("rid"), count, generations::newRid);
        String id = "cmpl-" + rids.name();
        try (GenerationGroup group = generations.startGroup(bootstrap, params, count, rids)) {
            if (!stream) {
                GenerationGroup.Result result = group.run(GenerationGroup.Sink.NONE);
                if (result.failure().isPresent()) {
                    throw Generations.failure(result.failure().get());
                }
                ObjectNode response = JsonFields.openAiEnvelope(id, "text_completion", created, model.name());
                ArrayNode choices = response.putArray("choices");
                // with best_of, each prompt's n most likely candidates, most likely first; usage counts every candidate
                List<Integer> returned = bestOf ? Generations.best(result, count) : IntStream.range(0, count.total()).boxed().toList();
                for (int k = 0; k < returned.size(); k++) {
                    int index = returned.get(k);
                    choices.add(choice(result.outcomes().get(index), params.get(index / count.perPrompt()).options(), echo).put("index", k));
                }
                usage(response, result.outcomes(), count);
                exchange.sendJson(200, response);
                return;
            }
            Exchange.EventStream events = exchange.events();
            List<ChoiceStream> streams = new ArrayList<>();
            for (int i = 0; i < count.total(); i++) {
                GenerationParams prompt = params.get(i / count.perPrompt());
                streams.add(new ChoiceStream(echo ? echoText(prompt.promptIds()) : "", echo, prompt.options()));
            }
            GenerationGroup.Result result = group.run(new GenerationGroup.Sink()
            {
                @Override
                public void onToken(int index, Generation generation)
                        throws IOException
                {
                    events.send(chunk(id, created, streams.get(index).next(generation).put("index", index)));
                }

                @Override
                public void onEnd(int index, Generation.Outcome outcome)
                        throws IOException
                {
                    events.send(chunk(id, created, streams.get(index).last(outcome).put("index", index)));
                }
            });
            if (result.clientGone()) {
                return;
            }
            if (result.failure().isPresent()) {
                events.send(Exchange.errorBody(Generations.failure(result.failure().get())));
            }
            else if (includeUsage) {
                ObjectNode usage = JsonFields.openAiEnvelope(id, "text_completion", created, model.name());
                usage.putArray("choices");
                usage(usage, result.outcomes(), count);
                events.send(usage);
            }
            events.done();
        }
    }

    /** One generation of {@code prompt} as the body's per-generation fields (sampling, logprobs, echo) ask for it. */
    private GenerationParams generation(JsonFields body, int[] prompt, String promptField, String rid, Optional<RoomTicket> ticket)
    {
        body.onlyNeutral("suffix", null, "fill-in-the-middle is not supported: the completion only continues the prompt");
        body.string("user");
        UnusedFields.checkOpenAi(body);
        int maxTokens = body.integer("max_tokens", 1, model.maxContext()).map(Long::intValue).orElse(DEFAULT_MAX_TOKENS);
        generations.checkContext(prompt.length, promptField, maxTokens, "max_tokens");
        SamplingOptions options = ResponseFormats.withChatFormat(SamplingFields.parse(body, SamplingFields.Spelling.OPENAI, maxTokens,
                model.vocabSize()), body.raw("response_format"), body::has);
        Optional<LogprobOptions> logprobs = LogprobFields.completions(body, body.bool("echo").orElse(false));
        return new GenerationParams(rid, prompt, bootstrap.maxNewTokens(maxTokens), options, logprobs, ticket);
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

    /**
     * The choices of one streamed completion: each chunk carries the text and the tokens' log probabilities since the last;
     * with echo, the first chunk's start with the prompt's (as a whole answer's do, so the text offsets match it).
     */
    private final class ChoiceStream
    {
        private String prefix;
        private final SamplingOptions options;
        private boolean promptPending;
        private int sentChars;
        private int sentTokens;
        private int offset;

        ChoiceStream(String echoed, boolean echo, SamplingOptions options)
        {
            this.prefix = echoed;
            this.options = options;
            this.promptPending = echo;
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
            LogprobTrace logprobs = trace.get();
            choice.set("logprobs", LogprobJson.completions(logprobs, ids, sentTokens, ids.length, promptPending, offset,
                    CompletionsApi.this::promptWidth, id -> outputWidth(id, options), texts));
            if (promptPending) {
                // the offsets count from the echoed prompt's start, as a whole answer's do
                for (int p = logprobs.promptFrom(); p < logprobs.promptIds().length; p++) {
                    offset += promptWidth(logprobs.promptIds()[p]);
                }
                promptPending = false;
            }
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
