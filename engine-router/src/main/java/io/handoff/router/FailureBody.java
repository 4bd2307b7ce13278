package io.handoff.router;

import com.fasterxml.jackson.databind.JsonNode;
import io.handoff.http.base.JsonFields;
import io.handoff.trace.FailureCause;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The cause a server's error names, read from its OpenAI-style error object ({@code {"error": {..., "cause":
 * "checksum_mismatch"}}}), whether it came as a response body or as a stream's {@code data:} event. The bytes come
 * from a server this router forwards to; anything that is not such an object, or names no cause this build knows,
 * has no cause, and is relayed as it came.
 */
final class FailureBody
{
    private static final byte[] ERROR_KEY = "\"error\"".getBytes(StandardCharsets.UTF_8);

    private FailureBody() {}

    /** The cause a JSON error body names. */
    static Optional<FailureCause> cause(byte[] body)
    {
        if (body == null || body.length == 0 || !contains(body, ERROR_KEY)) {
            return Optional.empty();
        }
        try {
            JsonNode cause = JsonFields.MAPPER.readTree(body).path("error").path("cause");
            return cause.isTextual() ? byLabel(cause.asText()) : Optional.empty();
        }
        catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The cause an error event ({@code data: {"error": ...}} and its blank line) names; empty for any other event. */
    static Optional<FailureCause> eventCause(byte[] event)
    {
        // a token event costs one scan for the key, never a parse
        if (event == null || !contains(event, ERROR_KEY)) {
            return Optional.empty();
        }
        String text = new String(event, StandardCharsets.UTF_8).strip();
        if (!text.startsWith("data:")) {
            return Optional.empty();
        }
        return cause(text.substring("data:".length()).strip().getBytes(StandardCharsets.UTF_8));
    }

    /** The message of a JSON error body, or empty. */
    static Optional<String> message(byte[] body)
    {
        try {
            JsonNode message = JsonFields.MAPPER.readTree(body).path("error").path("message");
            return message.isTextual() ? Optional.of(message.asText()) : Optional.empty();
        }
        catch (IOException e) {
            return Optional.empty();
        }
    }

    private static Optional<FailureCause> byLabel(String label)
    {
        for (FailureCause cause : FailureCause.values()) {
            if (cause.label().equals(label)) {
                return Optional.of(cause);
            }
        }
        return Optional.empty();
    }

    private static boolean contains(byte[] bytes, byte[] key)
    {
        outer:
        for (int i = 0; i + key.length <= bytes.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (bytes[i + j] != key[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
