package io.handoff.http.chat;

import io.handoff.core.output.ToolFormat;

import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One turn of a conversation as a chat template sees it: {@code message.role} and {@code message.content}, and for
 * tool use {@code message.tool_calls} (an assistant's calls), {@code message.tool_call_id} and {@code message.name}
 * (a tool's result).
 */
public record ChatMessage(String role, String content, List<ToolFormat.Call> toolCalls, List<String> toolCallIds, Optional<String> toolCallId,
        Optional<String> name)
{
    public ChatMessage
    {
        requireNonNull(role, "role is null");
        requireNonNull(content, "content is null");
        toolCalls = List.copyOf(requireNonNull(toolCalls, "toolCalls is null"));
        toolCallIds = List.copyOf(requireNonNull(toolCallIds, "toolCallIds is null"));
        requireNonNull(toolCallId, "toolCallId is null");
        requireNonNull(name, "name is null");
        if (toolCallIds.size() != toolCalls.size()) {
            throw new IllegalArgumentException("one id per tool call: " + toolCallIds.size() + " ids for " + toolCalls.size() + " calls");
        }
    }

    public ChatMessage(String role, String content)
    {
        this(role, content, List.of(), List.of(), Optional.empty(), Optional.empty());
    }

    /** This message with {@code text} in place of its content and no calls (how a template without tools sees calls). */
    public ChatMessage withContent(String text)
    {
        return new ChatMessage(role, text, List.of(), List.of(), toolCallId, name);
    }
}
