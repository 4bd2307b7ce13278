package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.output.SamplingOptions;
import io.handoff.core.output.ToolFormat;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.fields.LogprobJson;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/chat/completions}: renders {@code messages} with the model's chat template (with the
 * generation prompt), encodes the text and generates, answering as OpenAI does: one
 * {@code chat.completion} with {@code n} choices, or with {@code stream} {@code chat.completion.chunk} events (each
 * choice's role, then content deltas marked with their choice's {@code index}, then each choice's finish reason, then
 * the usage if asked) and {@code data: [DONE]}. Through a router the body also carries its room, which this server
 * checks through {@link ChatModel#ticket}. With {@code logprobs}, each
 * choice (each delta) carries its tokens' log probabilities. {@code created} is when the request arrived.
 */
public final class ChatCompletionsApi
{
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private final ChatModel model;
    private final InstantSource clock;
    private final String ridPrefix;
    private final AtomicLong nextRid = new AtomicLong();

    public ChatCompletionsApi(ChatModel model, InstantSource clock)
    {
        this.model = requireNonNull(model, "model is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.ridPrefix = "chat-" + Long.toHexString(clock.instant().getEpochSecond()) + "-";
    }

    public void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        long created = clock.instant().getEpochSecond();
        int defaultMaxTokens = Math.min(model.defaultMaxTokens(), model.maxContext());
        JsonFields body = exchange.json();
        ChatRequest request = ChatRequest.parse(body.copy(), model.maxContext(), model.vocabSize(), defaultMaxTokens);
        request.model().ifPresent(name -> {
            if (!name.equals(model.id())) {
                throw ApiError.notFound("model_not_found", "model", "model '" + name + "' is not served here; this server serves '"
                        + model.id() + "' (GET /v1/models)");
            }
        });
        ChatTemplate template = model.template().orElseThrow(() -> ApiError.invalid("no_chat_template", "messages",
                "model " + model.id() + " has no chat template; use /v1/completions with a prompt you format yourself"));
        ChatTools tools = request.tools();
        Optional<ToolFormat> format = tools.active() ? Optional.of(ToolFormat.of(template.source())) : Optional.empty();
        String prompt = render(template, request.messages(), tools, format);
        SamplingOptions sampling = format.flatMap(f -> tools.grammar(f, f.specialStart().map(model::specialTokenId).orElse(OptionalInt.empty())))
                .map(request.sampling()::withGrammar).orElse(request.sampling());
        String rid = request.rid().orElseGet(() -> ridPrefix + nextRid.incrementAndGet());
        ChatModel.Request generation = new ChatModel.Request(rid, model.encode(prompt), request.maxTokens().orElse(defaultMaxTokens),
                sampling, request.logprobs(), request.n(), model.ticket(body, exchange));
        Reply reply = new Reply("chatcmpl-" + rid, created, generation, format);
        if (request.stream()) {
            stream(exchange, reply, request.includeUsage());
            return;
        }
        ChatModel.Result result = model.generate(generation, (index, text, ids, logprobs) -> {});
        if (result.failure().isPresent()) {
            throw result.failure().get();
        }
        ObjectNode response = reply.envelope("chat.completion");
        ArrayNode choices = response.putArray("choices");
        for (int i = 0; i < result.outcomes().size(); i++) {
            choices.add(reply.choice(i, result.outcomes().get(i)));
        }
        usage(response, result.outcomes());
        exchange.sendJson(200, response);
    }

    /** One answer's id, time and request, and how its choices look. */
    private final class Reply
    {
        private final String id;
        private final long created;
        private final ChatModel.Request request;
        // how the model writes tool calls, when the request has tools the model may call
        private final Optional<ToolFormat> tools;
        // per choice: the output tokens whose log probabilities went out
        private final int[] sentTokens;

        Reply(String id, long created, ChatModel.Request request, Optional<ToolFormat> tools)
        {
            this.id = id;
            this.created = created;
            this.request = request;
            this.tools = tools;
            this.sentTokens = new int[request.n()];
        }

        /** The output's text and calls: all text when the request has no tools or the output calls none. */
        ToolFormat.Parsed parsed(ChatModel.Outcome outcome)
        {
            return tools.map(f -> f.parse(outcome.text()))
                    .orElseGet(() -> new ToolFormat.Parsed(Optional.of(outcome.text()), List.of()));
        }

        /** How much of the text so far may go out as content (held back where tool calls may start). */
        int streamable(String text)
        {
            return tools.map(f -> ToolCallJson.streamable(text, f.trigger())).orElse(text.length());
        }

        String finishReason(ChatModel.Outcome outcome, ToolFormat.Parsed parsed)
        {
            return !parsed.calls().isEmpty() && outcome.finishReason().equals("stop") ? "tool_calls" : outcome.finishReason();
        }

        ObjectNode envelope(String object)
        {
            return JsonFields.openAiEnvelope(id, object, created, model.id());
        }

        ObjectNode chunk()
        {
            ObjectNode chunk = envelope("chat.completion.chunk");
            chunk.putArray("choices");
            return chunk;
        }

        /** Choice {@code index} of the whole answer: the message, its log probabilities, the finish reason. */
        ObjectNode choice(int index, ChatModel.Outcome outcome)
        {
            ObjectNode choice = JsonFields.MAPPER.createObjectNode();
            choice.put("index", index);
            ToolFormat.Parsed parsed = parsed(outcome);
            ObjectNode message = choice.putObject("message").put("role", "assistant").put("content", parsed.content().orElse(null));
            if (!parsed.calls().isEmpty()) {
                message.set("tool_calls", ToolCallJson.message(request.rid(), index, parsed.calls()));
            }
            logprobs(index, choice, outcome.outputIds(), outcome.logprobs());
            choice.put("finish_reason", finishReason(outcome, parsed));
            return choice;
        }

        /** A chunk of choice {@code index} with the content since its last and the log probabilities of the tokens since its last. */
        ObjectNode delta(int index, String content, int[] ids, List<TokenLogprob> logprobs)
        {
            ObjectNode chunk = chunk();
            ObjectNode choice = chunk.withArray("choices").addObject().put("index", index);
            choice.putObject("delta").put("content", content);
            logprobs(index, choice, ids, logprobs);
            choice.putNull("finish_reason");
            return chunk;
        }

        private void logprobs(int index, ObjectNode choice, int[] ids, List<TokenLogprob> logprobs)
        {
            if (request.logprobs().isEmpty()) {
                choice.putNull("logprobs");
                return;
            }
            choice.set("logprobs", LogprobJson.chat(logprobs, ids, Math.min(sentTokens[index], ids.length), ids.length,
                    request.logprobs().get().topN(), model.tokenTexts()));
            sentTokens[index] = Math.max(sentTokens[index], ids.length);
        }
    }

    /** {@code messages} as the model's prompt, with the generation prompt; a template that cannot render them is a 400. */
    public static String render(ChatTemplate template, List<ChatMessage> messages)
    {
        return render(template, messages, ChatTools.NONE, Optional.empty());
    }

    /**
     * {@code messages} and the tools the model may call as the model's prompt: through its template's {@code tools}, or
     * for a template without them ({@link ToolFormat#GENERIC}) as a system message, with earlier calls written as text.
     */
    static String render(ChatTemplate template, List<ChatMessage> messages, ChatTools tools, Optional<ToolFormat> format)
    {
        Map<String, Object> extra = new HashMap<>();
        List<ChatMessage> turns = messages;
        if (format.isPresent() && format.get().templateRendersTools()) {
            extra.put("tools", tools.templateValues());
        }
        else if (format.isPresent()) {
            turns = new ArrayList<>();
            String described = format.get().systemPrompt(tools.jsonTexts());
            if (messages.getFirst().role().equals("system")) {
                turns.add(messages.getFirst().withContent(messages.getFirst().content() + "\n\n" + described));
            }
            else {
                turns.add(new ChatMessage("system", described));
            }
            for (ChatMessage message : messages.subList(messages.getFirst().role().equals("system") ? 1 : 0, messages.size())) {
                StringBuilder text = new StringBuilder(message.content());
                message.toolCalls().forEach(call -> text.append(text.isEmpty() ? "" : "\n").append(format.get().written(call)));
                turns.add(message.withContent(text.toString()));
            }
        }
        try {
            return template.render(turns, true, extra);
        }
        catch (ChatTemplateException e) {
            throw ApiError.invalid("chat_template_error", "messages", e.raised() ? e.getMessage()
                    : "the model's chat template cannot render these messages: " + e.getMessage());
        }
    }

    private void stream(Exchange exchange, Reply reply, boolean includeUsage)
            throws IOException, InterruptedException
    {
        // Opened at the first output, so a generation refused up front (context, overload) is still a plain HTTP error.
        Events events = new Events(exchange, reply);
        int[] sent = new int[reply.request.n()];
        ChatModel.Result result = model.generate(reply.request, (index, text, ids, logprobs) -> {
            int ready = reply.streamable(text);
            if (ready > sent[index]) {
                events.send(reply.delta(index, text.substring(sent[index], ready), ids, logprobs));
                sent[index] = ready;
            }
        });
        if (result.clientGone()) {
            return;
        }
        if (result.failure().isPresent()) {
            events.send(Exchange.errorBody(result.failure().get()));
        }
        else {
            for (int i = 0; i < result.outcomes().size(); i++) {
                ChatModel.Outcome outcome = result.outcomes().get(i);
                ToolFormat.Parsed parsed = reply.parsed(outcome);
                // with calls, the content is the text before them (all of which may not have gone out yet); else all the text
                String content = parsed.calls().isEmpty() ? outcome.text() : parsed.content().orElse("");
                boolean logprobsLeft = reply.request.logprobs().isPresent() && reply.sentTokens[i] < outcome.outputIds().length;
                if (content.length() > sent[i] || logprobsLeft) {
                    String rest = content.substring(Math.min(sent[i], content.length()));
                    events.send(reply.delta(i, rest, outcome.outputIds(), outcome.logprobs()));
                }
                if (!parsed.calls().isEmpty()) {
                    ObjectNode calls = reply.chunk();
                    ObjectNode choice = calls.withArray("choices").addObject().put("index", i);
                    choice.putObject("delta").set("tool_calls", ToolCallJson.delta(reply.request.rid(), i, parsed.calls()));
                    choice.putNull("finish_reason");
                    events.send(calls);
                }
                ObjectNode last = reply.chunk();
                last.withArray("choices").addObject().put("index", i).put("finish_reason", reply.finishReason(outcome, parsed)).putObject("delta");
                events.send(last);
            }
            if (includeUsage) {
                ObjectNode usage = reply.chunk();
                usage.putArray("choices");
                usage(usage, result.outcomes());
                events.send(usage);
            }
        }
        events.done();
    }

    /** The event stream, started with the chunk that carries the assistant role. */
    private final class Events
    {
        private final Exchange exchange;
        private final Reply reply;
        private OutputStream out;

        Events(Exchange exchange, Reply reply)
        {
            this.exchange = exchange;
            this.reply = reply;
        }

        void send(JsonNode event)
                throws IOException
        {
            if (out == null) {
                out = exchange.stream(200, "text/event-stream; charset=utf-8");
                for (int i = 0; i < reply.request.n(); i++) {
                    ObjectNode first = reply.chunk();
                    first.withArray("choices").addObject().put("index", i).putNull("finish_reason")
                            .putObject("delta").put("role", "assistant").put("content", "");
                    write(first);
                }
            }
            write(event);
        }

        void done()
                throws IOException
        {
            out.write(DONE);
            out.flush();
            out.close();
        }

        private void write(JsonNode event)
                throws IOException
        {
            out.write("data: ".getBytes(StandardCharsets.UTF_8));
            out.write(JsonFields.MAPPER.writeValueAsBytes(event));
            out.write("\n\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
    }

    /** As OpenAI counts it: the prompt's tokens once, however many choices it has; every choice's completion tokens. */
    private static void usage(ObjectNode node, List<ChatModel.Outcome> outcomes)
    {
        int prompt = outcomes.getFirst().promptTokens();
        int completion = outcomes.stream().mapToInt(ChatModel.Outcome::completionTokens).sum();
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", prompt);
        usage.put("completion_tokens", completion);
        usage.put("total_tokens", prompt + completion);
    }
}
