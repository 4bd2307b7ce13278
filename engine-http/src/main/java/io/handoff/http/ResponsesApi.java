package io.handoff.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.output.SamplingOptions;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;
import io.handoff.http.chat.ChatCompletionsApi;
import io.handoff.http.chat.ChatModel;
import io.handoff.http.chat.ChatTemplate;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * OpenAI's {@code POST /v1/responses}, text in and text out ({@link ResponsesRequest}): the messages are rendered with
 * the model's chat template as {@code /v1/chat/completions} renders them, and the answer is one {@code response}
 * object holding one assistant message, {@code status} {@code completed}, or {@code incomplete} when
 * {@code max_output_tokens} ended it. With {@code stream} it is the Responses event stream: {@code response.created},
 * {@code response.in_progress}, the output item and content part added, {@code response.output_text.delta} events,
 * their {@code done} events, then {@code response.completed} (or {@code response.incomplete}, or {@code response.failed}).
 * Nothing is stored.
 */
final class ResponsesApi
{
    private final ChatModel model;
    private final String ridPrefix;
    private final AtomicLong nextRid = new AtomicLong();

    ResponsesApi(ChatModel model, long startedEpochSeconds)
    {
        this.model = requireNonNull(model, "model is null");
        this.ridPrefix = "resp-" + Long.toHexString(startedEpochSeconds) + "-";
    }

    void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        JsonFields body = exchange.json();
        ResponsesRequest request = ResponsesRequest.parse(body, model.maxContext());
        ModelEndpoints.checkServed(request.model(), model.id());
        ChatTemplate template = model.template().orElseThrow(() -> ApiError.invalid("no_chat_template", "input",
                "model " + model.id() + " has no chat template to render input with; use /v1/completions with a prompt you format yourself"));
        String rid = request.rid().orElseGet(() -> ridPrefix + nextRid.incrementAndGet());
        int maxTokens = request.maxOutputTokens().orElse(Math.min(model.defaultMaxTokens(), model.maxContext()));
        ChatModel.Request generation = new ChatModel.Request(rid, model.encode(ChatCompletionsApi.render(template, request.messages())), maxTokens,
                new SamplingOptions(new SamplingParams((float) request.temperature(), (float) request.topP(), 0), List.of(), Set.of(), false, false,
                        true, request.format()), Optional.empty(), 1, model.ticket(body, exchange));
        Shape shape = new Shape(model.id(), "resp_" + rid.replace('-', '_'), "msg_" + rid.replace('-', '_'), System.currentTimeMillis() / 1000, request, maxTokens);
        if (request.stream()) {
            stream(exchange, shape, generation);
            return;
        }
        ChatModel.Result result = model.generate(generation, (index, text, ids, logprobs) -> {});
        if (result.failure().isPresent()) {
            // its status and cause, as chat answers them: a router retries a failed transfer on the cause
            throw result.failure().get();
        }
        ChatModel.Outcome outcome = result.single();
        exchange.sendJson(200, shape.response(Optional.of(outcome)));
    }

    private void stream(Exchange exchange, Shape shape, ChatModel.Request generation)
            throws IOException, InterruptedException
    {
        // opened at the first output, so a generation refused up front (context, overload) is still a plain HTTP error
        Events events = new Events(exchange, shape);
        int[] sent = {0};
        ChatModel.Result result = model.generate(generation, (index, text, ids, logprobs) -> {
            if (text.length() > sent[0]) {
                events.delta(text.substring(sent[0]));
                sent[0] = text.length();
            }
        });
        if (result.clientGone()) {
            return;
        }
        ChatModel.Outcome outcome = result.single();
        if (!outcome.finishReason().equals("error") && outcome.text().length() > sent[0]) {
            events.delta(outcome.text().substring(sent[0]));
        }
        events.finish(outcome);
    }

    /** The objects of one response, in the Responses API's shapes. */
    private record Shape(String model, String id, String messageId, long createdAt, ResponsesRequest request, int maxTokens)
    {
        /** The response object: in progress while {@code outcome} is empty, else completed, incomplete or failed. */
        ObjectNode response(Optional<ChatModel.Outcome> outcome)
        {
            ObjectNode node = JsonFields.MAPPER.createObjectNode();
            node.put("id", id);
            node.put("object", "response");
            node.put("created_at", createdAt);
            node.put("status", outcome.map(Shape::status).orElse("in_progress"));
            if (outcome.isPresent() && outcome.get().finishReason().equals("length")) {
                node.putObject("incomplete_details").put("reason", "max_output_tokens");
            }
            else {
                node.putNull("incomplete_details");
            }
            if (outcome.isPresent() && outcome.get().finishReason().equals("error")) {
                node.putObject("error").put("code", "server_error").put("message", "generation failed: " + outcome.get().error().orElse("unknown error"));
            }
            else {
                node.putNull("error");
            }
            node.put("model", model);
            request.instructions().ifPresentOrElse(text -> node.put("instructions", text), () -> node.putNull("instructions"));
            node.put("max_output_tokens", maxTokens);
            node.put("temperature", request.temperature());
            node.put("top_p", request.topP());
            node.put("parallel_tool_calls", false);
            node.put("tool_choice", "none");
            node.putArray("tools");
            node.put("store", false);
            node.putObject("text").putObject("format").put("type", request.format().map(g -> g.source().startsWith("json_object") ? "json_object"
                    : "json_schema").orElse("text"));
            ArrayNode output = node.putArray("output");
            outcome.filter(o -> !o.finishReason().equals("error")).ifPresent(o -> output.add(message(o.text(), "completed")));
            outcome.ifPresentOrElse(o -> {
                ObjectNode usage = node.putObject("usage");
                usage.put("input_tokens", o.promptTokens());
                usage.put("output_tokens", o.completionTokens());
                usage.put("total_tokens", o.promptTokens() + o.completionTokens());
            }, () -> node.putNull("usage"));
            return node;
        }

        ObjectNode message(String text, String status)
        {
            ObjectNode item = JsonFields.MAPPER.createObjectNode();
            item.put("type", "message");
            item.put("id", messageId);
            item.put("status", status);
            item.put("role", "assistant");
            ArrayNode content = item.putArray("content");
            if (text != null) {
                content.add(part(text));
            }
            return item;
        }

        static ObjectNode part(String text)
        {
            ObjectNode part = JsonFields.MAPPER.createObjectNode();
            part.put("type", "output_text");
            part.put("text", text);
            part.putArray("annotations");
            return part;
        }

        private static String status(ChatModel.Outcome outcome)
        {
            return switch (outcome.finishReason()) {
                case "length" -> "incomplete";
                case "error" -> "failed";
                default -> "completed";
            };
        }
    }

    /** The event stream: each event named in its {@code event:} line and its {@code type}, numbered from 0. */
    private static final class Events
    {
        private final Exchange exchange;
        private final Shape shape;
        private OutputStream out;
        private int sequence;

        Events(Exchange exchange, Shape shape)
        {
            this.exchange = exchange;
            this.shape = shape;
        }

        void delta(String text)
                throws IOException
        {
            open();
            send(item("response.output_text.delta").put("delta", text));
        }

        void finish(ChatModel.Outcome outcome)
                throws IOException
        {
            open();
            ObjectNode response = shape.response(Optional.of(outcome));
            if (!outcome.finishReason().equals("error")) {
                send(item("response.output_text.done").put("text", outcome.text()));
                send(item("response.content_part.done").set("part", Shape.part(outcome.text())));
                ObjectNode done = event("response.output_item.done").put("output_index", 0);
                done.set("item", shape.message(outcome.text(), "completed"));
                send(done);
            }
            String type = switch (response.get("status").textValue()) {
                case "incomplete" -> "response.incomplete";
                case "failed" -> "response.failed";
                default -> "response.completed";
            };
            send(event(type).set("response", response));
            out.close();
        }

        /** The events before the first delta: created, in progress, the message item and its text part added. */
        private void open()
                throws IOException
        {
            if (out != null) {
                return;
            }
            out = exchange.stream(200, "text/event-stream; charset=utf-8");
            send(event("response.created").set("response", shape.response(Optional.empty())));
            send(event("response.in_progress").set("response", shape.response(Optional.empty())));
            ObjectNode added = event("response.output_item.added").put("output_index", 0);
            added.set("item", shape.message(null, "in_progress"));
            send(added);
            send(item("response.content_part.added").set("part", Shape.part("")));
        }

        private ObjectNode event(String type)
        {
            return JsonFields.MAPPER.createObjectNode().put("type", type).put("sequence_number", sequence++);
        }

        /** An event about the message's one text part. */
        private ObjectNode item(String type)
        {
            return event(type).put("item_id", shape.messageId()).put("output_index", 0).put("content_index", 0);
        }

        private void send(ObjectNode event)
                throws IOException
        {
            out.write(("event: " + event.get("type").textValue() + "\ndata: ").getBytes(StandardCharsets.UTF_8));
            out.write(JsonFields.MAPPER.writeValueAsBytes(event));
            out.write("\n\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
    }
}
