package io.handoff.http.chat;

/**
 * A chat template that cannot be parsed or rendered. {@link #raised()} marks the template's own
 * {@code raise_exception(message)}: a conversation the template refuses, reported to the client as is.
 */
public final class ChatTemplateException
        extends RuntimeException
{
    private final boolean raised;

    ChatTemplateException(String message)
    {
        this(message, false);
    }

    ChatTemplateException(String message, boolean raised)
    {
        super(message, null, false, false);
        this.raised = raised;
    }

    /** True when the template called {@code raise_exception}: the message is the template author's. */
    public boolean raised()
    {
        return raised;
    }
}
