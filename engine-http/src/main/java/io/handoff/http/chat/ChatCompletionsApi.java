package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.http.ApiError;
import io.handoff.http.Exchange;
import io.handoff.http.JsonFields;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * {@code POST /v1/chat/completions}: renders {@code messages} with the model's chat template (with the
 * generation prompt), encodes the text and generates, answering as OpenAI does: one
 * {@code chat.completion}, or with {@code stream} {@code chat.completion.chunk} events (the role, then
 * content deltas, then the finish reason, then the usage if asked) and {@code data: [DONE]}.
 */
public final class ChatCompletionsApi
{
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private final ChatModel model;
    private final long created;
    private final String ridPrefix;
    private final AtomicLong nextRid = new AtomicLong();

    public ChatCompletionsApi(ChatModel model, long createdEpochSeconds)
    {
        this.model = requireNonNull(model, "model is null");
        this.created = createdEpochSeconds;
        this.ridPrefix = "chat-" + Long.toHexString(createdEpochSeconds) + "-";
    }

    public void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        ChatRequest request = ChatRequest.parse(exchange.json().copy(), model.maxContext());
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
        ChatModel.Request generation = new ChatModel.Request(rid, model.encode(prompt),
                request.maxTokens().orElse(Math.min(model.defaultMaxTokens(), model.maxContext())),
                (float) request.temperature(), (float) request.topP(), request.seed(), request.stop());
        String id = "chatcmpl-" + rid;
        if (request.stream()) {
            stream(exchange, id, generation, request.includeUsage());
            return;
        }
        ChatModel.Outcome outcome = model.generate(generation, text -> {});
        if (outcome.finishReason().equals("error")) {
            throw ApiError.internal("generation failed: " + outcome.error().orElse("unknown error"));
        }
        ObjectNode response = envelope(id, "chat.completion");
        ObjectNode choice = response.putArray("choices").addObject();
        choice.put("index", 0);
        choice.putObject("message").put("role", "assistant").put("content", outcome.text());
        choice.putNull("logprobs");
        choice.put("finish_reason", outcome.finishReason());
        usage(response, outcome);
        exchange.sendJson(200, response);
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

    private void stream(Exchange exchange, String id, ChatModel.Request generation, boolean includeUsage)
            throws IOException, InterruptedException
    {
        // Opened at the first output, so a generation refused up front (context, overload) is still a plain HTTP error.
        Events events = new Events(exchange, id);
        int[] sent = {0};
        ChatModel.Outcome outcome = model.generate(generation, text -> {
            if (text.length() > sent[0]) {
                events.send(delta(id, text.substring(sent[0])));
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
            if (outcome.text().length() > sent[0]) {
                events.send(delta(id, outcome.text().substring(sent[0])));
            }
            ObjectNode last = chunk(id);
            last.withArray("choices").addObject().put("index", 0).put("finish_reason", outcome.finishReason()).putObject("delta");
            events.send(last);
            if (includeUsage) {
                ObjectNode usage = chunk(id);
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
        private final String id;
        private OutputStream out;

        Events(Exchange exchange, String id)
        {
            this.exchange = exchange;
            this.id = id;
        }

        void send(JsonNode event)
                throws IOException
        {
            if (out == null) {
                out = exchange.stream(200, "text/event-stream; charset=utf-8");
                ObjectNode first = chunk(id);
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

    private ObjectNode delta(String id, String content)
    {
        ObjectNode chunk = chunk(id);
        chunk.withArray("choices").addObject().put("index", 0).putNull("finish_reason").putObject("delta").put("content", content);
        return chunk;
    }

    private ObjectNode chunk(String id)
    {
        ObjectNode chunk = envelope(id, "chat.completion.chunk");
        chunk.putArray("choices");
        return chunk;
    }

    private ObjectNode envelope(String id, String object)
    {
        return JsonFields.openAiEnvelope(id, object, created, model.id());
    }

    private static void usage(ObjectNode node, ChatModel.Outcome outcome)
    {
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", outcome.promptTokens());
        usage.put("completion_tokens", outcome.completionTokens());
        usage.put("total_tokens", outcome.promptTokens() + outcome.completionTokens());
    }
}
