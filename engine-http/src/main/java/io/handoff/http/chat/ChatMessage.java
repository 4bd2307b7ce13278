package io.handoff.http.chat;

import static java.util.Objects.requireNonNull;

/** One turn of a conversation as a chat template sees it: {@code message.role} and {@code message.content}. */
public record ChatMessage(String role, String content)
{
    public ChatMessage
    {
        requireNonNull(role, "role is null");
        requireNonNull(content, "content is null");
    }
}
