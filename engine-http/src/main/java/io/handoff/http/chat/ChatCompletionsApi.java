package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.ApiError;
import io.handoff.http.Exchange;
import io.handoff.http.JsonFields;
import io.handoff.http.LogprobJson;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/chat/completions}: renders {@code messages} with the model's chat template (with the
 * generation prompt), encodes the text and generates, answering as OpenAI does: one
 * {@code chat.completion}, or with {@code stream} {@code chat.completion.chunk} events (the role, then
 * content deltas, then the finish reason, then the usage if asked) and {@code data: [DONE]}. With {@code logprobs}, each
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
        ChatRequest request = ChatRequest.parse(exchange.json().copy(), model.maxContext(), model.vocabSize(), defaultMaxTokens);
        request.model().ifPresent(name -> {
            if (!name.equals(model.id())) {
                throw ApiError.notFound("model_not_found", "model", "model '" + name + "' is not served here; this server serves '"
                        + model.id() + "' (GET /v1/models)");
            }
        });
        ChatTemplate template = model.template().orElseThrow(() -> ApiError.invalid("no_chat_template", "messages",
                "model " + model.id() + " has no chat template; use /v1/completions with a prompt you format yourself"));
        String prompt = render(template, request.messages());
        String rid = ridPrefix + nextRid.incrementAndGet();
        ChatModel.Request generation = new ChatModel.Request(rid, model.encode(prompt), request.maxTokens().orElse(defaultMaxTokens),
                request.sampling(), request.logprobs());
        Reply reply = new Reply("chatcmpl-" + rid, created, generation);
        if (request.stream()) {
            stream(exchange, reply, request.includeUsage());
            return;
        }
        ChatModel.Outcome outcome = model.generate(generation, (text, ids, logprobs) -> {});
        if (outcome.finishReason().equals("error")) {
            throw ApiError.internal("generation failed: " + outcome.error().orElse("unknown error"));
        }
        ObjectNode response = reply.envelope("chat.completion");
        response.putArray("choices").add(reply.choice(outcome));
        usage(response, outcome);
        exchange.sendJson(200, response);
    }

    /** One answer's id, time and request, and how its choices look. */
    private final class Reply
    {
        private final String id;
        private final long created;
        private final ChatModel.Request request;
        private int sentTokens;

        Reply(String id, long created, ChatModel.Request request)
        {
            this.id = id;
            this.created = created;
            this.request = request;
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

        /** The whole answer's {@code choices[0]}: the message, its log probabilities, the finish reason. */
        ObjectNode choice(ChatModel.Outcome outcome)
        {
            ObjectNode choice = JsonFields.MAPPER.createObjectNode();
            choice.put("index", 0);
            choice.putObject("message").put("role", "assistant").put("content", outcome.text());
            logprobs(choice, outcome.outputIds(), outcome.logprobs());
            choice.put("finish_reason", outcome.finishReason());
            return choice;
        }

        /** A chunk with the content since the last and the log probabilities of the tokens since the last. */
        ObjectNode delta(String content, int[] ids, List<TokenLogprob> logprobs)
        {
            ObjectNode chunk = chunk();
            ObjectNode choice = chunk.withArray("choices").addObject().put("index", 0);
            choice.putObject("delta").put("content", content);
            logprobs(choice, ids, logprobs);
            choice.putNull("finish_reason");
            return chunk;
        }

        private void logprobs(ObjectNode choice, int[] ids, List<TokenLogprob> logprobs)
        {
            if (request.logprobs().isEmpty()) {
                choice.putNull("logprobs");
                return;
            }
            choice.set("logprobs", LogprobJson.chat(logprobs, ids, Math.min(sentTokens, ids.length), ids.length, request.logprobs().get().topN(),
                    model.tokenTexts()));
            sentTokens = Math.max(sentTokens, ids.length);
        }
    }

    /** {@code messages} as the model's prompt, with the generation prompt; a template that cannot render them is a 400. */
    public static String render(ChatTemplate template, List<ChatMessage> messages)
    {
        try {
            return template.render(messages, true);
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
        int[] sent = {0};
        ChatModel.Outcome outcome = model.generate(reply.request, (text, ids, logprobs) -> {
            if (text.length() > sent[0]) {
                events.send(reply.delta(text.substring(sent[0]), ids, logprobs));
                sent[0] = text.length();
            }
        });
        if (outcome.clientGone()) {
            return;
        }
        if (outcome.finishReason().equals("error")) {
            events.send(Exchange.errorBody(ApiError.internal("generation failed: " + outcome.error().orElse("unknown error"))));
        }
        else {
            boolean logprobsLeft = reply.request.logprobs().isPresent() && reply.sentTokens < outcome.outputIds().length;
            if (outcome.text().length() > sent[0] || logprobsLeft) {
                String rest = outcome.text().substring(Math.min(sent[0], outcome.text().length()));
                events.send(reply.delta(rest, outcome.outputIds(), outcome.logprobs()));
            }
            ObjectNode last = reply.chunk();
            last.withArray("choices").addObject().put("index", 0).put("finish_reason", outcome.finishReason()).putObject("delta");
            events.send(last);
            if (includeUsage) {
                ObjectNode usage = reply.chunk();
                usage.putArray("choices");
                usage(usage, outcome);
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
                ObjectNode first = reply.chunk();
                first.withArray("choices").addObject().put("index", 0).putNull("finish_reason")
                        .putObject("delta").put("role", "assistant").put("content", "");
                write(first);
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

    private static void usage(ObjectNode node, ChatModel.Outcome outcome)
    {
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", outcome.promptTokens());
        usage.put("completion_tokens", outcome.completionTokens());
        usage.put("total_tokens", outcome.promptTokens() + outcome.completionTokens());
    }
}
