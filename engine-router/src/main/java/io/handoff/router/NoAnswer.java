package io.handoff.router;

import java.net.ConnectException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Why a server gave no HTTP answer, in words: the JDK client's own messages are often empty. */
public final class NoAnswer
{
    private NoAnswer() {}

    /** {@code failure} (unwrapped from a future's wrappers) as a phrase, e.g. "connection refused (is it running?)". */
    public static String describe(Throwable failure)
    {
        Throwable cause = unwrap(failure);
        return switch (cause) {
            case HttpConnectTimeoutException _ -> "opening a connection timed out";
            case HttpTimeoutException _ -> "no answer in time";
            case ConnectException _ -> "connection refused (is it running?)";
            default -> cause.getMessage() == null || cause.getMessage().isBlank()
                    ? cause.getClass().getSimpleName()
                    : cause.getMessage() + " (" + cause.getClass().getSimpleName() + ")";
        };
    }

    static Throwable unwrap(Throwable failure)
    {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
