package io.handoff.status;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Text a member sent, made safe to print: bounded, and without control characters (which a terminal would obey). A
 * field that is not a short printable string is treated as absent.
 */
final class Untrusted
{
    /** Longest field value taken from a member: ids, incarnations and addresses are far shorter. */
    static final int MAX_FIELD = 253;
    /** Most entries taken from a member's list (suspect peers). */
    static final int MAX_ENTRIES = 64;
    private static final int MAX_EXCERPT = 200;

    private Untrusted() {}

    /** {@code node.field} when it is a string of 1 to {@link #MAX_FIELD} printable characters. */
    static Optional<String> field(JsonNode node, String field)
    {
        JsonNode value = node.path(field);
        return value.isTextual() ? printable(value.textValue()) : Optional.empty();
    }

    /** The strings of the array {@code node.field}, each printable, at most {@link #MAX_ENTRIES}. */
    static List<String> strings(JsonNode node, String field)
    {
        List<String> values = new ArrayList<>();
        for (JsonNode entry : node.path(field)) {
            if (values.size() == MAX_ENTRIES) {
                break;
            }
            if (entry.isTextual()) {
                printable(entry.textValue()).ifPresent(values::add);
            }
        }
        return values;
    }

    private static Optional<String> printable(String text)
    {
        if (text.isEmpty() || text.length() > MAX_FIELD || text.codePoints().anyMatch(Untrusted::control)) {
            return Optional.empty();
        }
        return Optional.of(text);
    }

    /** A short, printable excerpt of an answer's body, for an error message ({@code ""} for an empty one). */
    static String excerpt(byte[] body)
    {
        String text = new String(body, 0, Math.min(body.length, MAX_EXCERPT * 4), StandardCharsets.UTF_8).strip();
        StringBuilder clean = new StringBuilder();
        text.codePoints().limit(MAX_EXCERPT).forEach(c -> clean.appendCodePoint(control(c) ? '?' : c));
        return text.codePointCount(0, text.length()) > MAX_EXCERPT || body.length > MAX_EXCERPT * 4 ? clean + "..." : clean.toString();
    }

    private static boolean control(int c)
    {
        return Character.isISOControl(c) || Character.getType(c) == Character.FORMAT;
    }
}
