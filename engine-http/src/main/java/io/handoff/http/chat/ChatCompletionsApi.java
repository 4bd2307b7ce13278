package io.handoff.http.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
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
 * {@code chat.completion} with {@code n} choices, or with {@code stream} {@code chat.completion.chunk} events (each
 * choice's role, then content deltas marked with their choice's {@code index}, then each choice's finish reason, then
 * the usage if asked) and {@code data: [DONE]}. Through a router the body also carries its room, which this server
 * checks through {@link ChatModel#ticket}.
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
        JsonFields body = exchange.json();
        ChatRequest request = ChatRequest.parse(body.copy(), model.maxContext());
        request.model().ifPresent(name -> {
            if (!name.equals(model.id())) {
                throw ApiError.notFound("model_not_found", "model", "model '" + name + "' is not served here; this server serves '"
                        + model.id() + "' (GET /v1/models)");
            }
        });
        ChatTemplate template = model.template().orElseThrow(() -> ApiError.invalid("no_chat_template", "messages",
                "model " + model.id() + " has no chat template; use /v1/completions with a prompt you format yourself"));
        String prompt = render(template, request.messages());
        String rid = request.rid().orElseGet(() -> ridPrefix + nextRid.incrementAndGet());
        ChatModel.Request generation = new ChatModel.Request(rid, model.encode(prompt),
                request.maxTokens().orElse(Math.min(model.defaultMaxTokens(), model.maxContext())),
                (float) request.temperature(), (float) request.topP(), request.seed(), request.stop(), request.n(),
                model.ticket(body, exchange));
        String id = "chatcmpl-" + rid;
        if (request.stream()) {
            stream(exchange, id, generation, request.includeUsage());
            return;
        }
        ChatModel.Result result = model.generate(generation, (index, text) -> {});
        if (result.failure().isPresent()) {
            throw result.failure().get();
        }
        ObjectNode response = envelope(id, "chat.completion");
        ArrayNode choices = response.putArray("choices");
        for (int i = 0; i < result.outcomes().size(); i++) {
            ChatModel.Outcome outcome = result.outcomes().get(i);
            ObjectNode choice = choices.addObject();
            choice.put("index", i);
            choice.putObject("message").put("role", "assistant").put("content", outcome.text());
            choice.putNull("logprobs");
            choice.put("finish_reason", outcome.finishReason());
        }
        usage(response, result.outcomes());
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
        Events events = new Events(exchange, id, generation.n());
        int[] sent = new int[generation.n()];
        ChatModel.Result result = model.generate(generation, (index, text) -> {
            if (text.length() > sent[index]) {
                events.send(delta(id, index, text.substring(sent[index])));
                sent[index] = text.length();
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
                if (outcome.text().length() > sent[i]) {
                    events.send(delta(id, i, outcome.text().substring(sent[i])));
                }
                ObjectNode last = chunk(id);
                last.withArray("choices").addObject().put("index", i).put("finish_reason", outcome.finishReason()).putObject("delta");
                events.send(last);
            }
            if (includeUsage) {
                ObjectNode usage = chunk(id);
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
        private final String id;
        private final int choices;
        private OutputStream out;

        Events(Exchange exchange, String id, int choices)
        {
            this.exchange = exchange;
            this.id = id;
            this.choices = choices;
        }

        void send(JsonNode event)
                throws IOException
        {
            if (out == null) {
                out = exchange.stream(200, "text/event-stream; charset=utf-8");
                for (int i = 0; i < choices; i++) {
                    ObjectNode first = chunk(id);
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

    private ObjectNode delta(String id, int index, String content)
    {
        ObjectNode chunk = chunk(id);
        chunk.withArray("choices").addObject().put("index", index).putNull("finish_reason").putObject("delta").put("content", content);
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

    /** As OpenAI counts it: the prompt's tokens once, however many choices it has; every choice's completion tokens. */
    private static void usage(ObjectNode node, java.util.List<ChatModel.Outcome> outcomes)
    {
        int prompt = outcomes.getFirst().promptTokens();
        int completion = outcomes.stream().mapToInt(ChatModel.Outcome::completionTokens).sum();
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", prompt);
        usage.put("completion_tokens", completion);
        usage.put("total_tokens", prompt + completion);
    }
}
