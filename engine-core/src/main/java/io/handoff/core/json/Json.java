package io.handoff.core.json;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * A strict RFC 8259 reader for the few JSON files a checkpoint carries (a safetensors header,
 * {@code config.json}, a shard index). The engine core may not depend on a JSON library, and these
 * files are untrusted input, so the reader is small and bounded: the caller gives the largest input
 * it accepts, nesting deeper than {@link #MAX_DEPTH} is refused, and so are duplicate object keys
 * (two values for one tensor name would make "which one wins" a security question).
 *
 * <p>Values are plain Java: an object is an unmodifiable {@code Map<String, Object>} in document
 * order, an array an unmodifiable {@code List<Object>}, a string {@link String}, an integer that fits
 * a {@code long} {@link Long}, any other number {@link BigDecimal} (exact; never rounded to a double),
 * {@code true}/{@code false} {@link Boolean}, {@code null} Java {@code null}. Errors are
 * {@link IllegalArgumentException}s that name the source, the character offset and what was expected.
 */
public final class Json
{
    public static final int MAX_DEPTH = 64;

    private final String source;
    private final String text;
    private int at;

    private Json(String source, String text)
    {
        this.source = source;
        this.text = text;
    }

    /**
     * Parses one JSON document from UTF-8 bytes.
     *
     * @param source what the bytes are (a file name), for error messages
     * @param maxBytes the largest input accepted; a longer one is refused before it is decoded
     */
    public static Object parse(byte[] utf8, int maxBytes, String source)
    {
        requireNonNull(utf8, "utf8 is null");
        requireNonNull(source, "source is null");
        if (utf8.length > maxBytes) {
            throw new IllegalArgumentException(source + ": JSON of " + utf8.length + " bytes is over the limit of " + maxBytes + " bytes");
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8))
                    .toString();
        }
        catch (CharacterCodingException e) {
            throw new IllegalArgumentException(source + ": JSON is not valid UTF-8 (" + e.getMessage() + ")", e);
        }
        return parse(text, source);
    }

    /** Parses one JSON document from text; the caller bounds its length. */
    public static Object parse(String text, String source)
    {
        requireNonNull(text, "text is null");
        Json reader = new Json(requireNonNull(source, "source is null"), text);
        reader.skipWhitespace();
        Object value = reader.value(1);
        reader.skipWhitespace();
        if (reader.at != text.length()) {
            throw reader.error("end of input after the top-level value");
        }
        return value;
    }

    private Object value(int depth)
    {
        if (at >= text.length()) {
            throw error("a value");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("a value");
            }
        };
    }

    private Map<String, Object> object(int depth)
    {
        enter(depth);
        at++;
        Map<String, Object> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            at++;
            return Collections.unmodifiableMap(members);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("a string key");
            }
            int keyAt = at;
            String key = string();
            skipWhitespace();
            expect(':', "':' after an object key");
            skipWhitespace();
            Object member = value(depth + 1);
            if (members.containsKey(key)) {
                throw new IllegalArgumentException(source + ": invalid JSON at offset " + keyAt + ": duplicate key \"" + key
                        + "\"; each key may appear once per object");
            }
            members.put(key, member);
            skipWhitespace();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect('}', "',' or '}' in an object");
            return Collections.unmodifiableMap(members);
        }
    }

    private List<Object> array(int depth)
    {
        enter(depth);
        at++;
        List<Object> elements = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            at++;
            return Collections.unmodifiableList(elements);
        }
        while (true) {
            skipWhitespace();
            elements.add(value(depth + 1));
            skipWhitespace();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect(']', "',' or ']' in an array");
            return Collections.unmodifiableList(elements);
        }
    }

    private void enter(int depth)
    {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException(source + ": invalid JSON at offset " + at + ": nesting deeper than " + MAX_DEPTH
                    + " levels is refused");
        }
    }

    private String string()
    {
        at++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) {
                throw error("'\"' closing the string");
            }
            char c = text.charAt(at);
            if (c == '"') {
                at++;
                return out.toString();
            }
            if (c < 0x20) {
                throw error("an escape (\\u" + String.format("%04x", (int) c) + ") for the control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                at++;
                continue;
            }
            at++;
            if (at >= text.length()) {
                throw error("an escape character after '\\'");
            }
            char escape = text.charAt(at);
            at++;
            switch (escape) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> out.appendCodePoint(unicodeEscape());
                default -> {
                    at--;
                    throw error("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
                }
            }
        }
    }

    /** After {@code \}{@code u}: four hex digits, and for a high surrogate the {@code \}{@code uDC00..DFFF} that must follow. */
    private int unicodeEscape()
    {
        int escapeAt = at - 2;
        char unit = (char) hex4();
        if (Character.isLowSurrogate(unit)) {
            throw new IllegalArgumentException(source + ": invalid JSON at offset " + escapeAt
                    + ": a low surrogate escape without the high surrogate before it");
        }
        if (!Character.isHighSurrogate(unit)) {
            return unit;
        }
        if (!text.startsWith("\\u", at)) {
            throw new IllegalArgumentException(source + ": invalid JSON at offset " + at
                    + ": expected \\uDC00..\\uDFFF completing the surrogate pair begun at offset " + escapeAt);
        }
        at += 2;
        char low = (char) hex4();
        if (!Character.isLowSurrogate(low)) {
            throw new IllegalArgumentException(source + ": invalid JSON at offset " + (at - 6)
                    + ": expected \\uDC00..\\uDFFF completing the surrogate pair begun at offset " + escapeAt);
        }
        return Character.toCodePoint(unit, low);
    }

    private int hex4()
    {
        int value = 0;
        for (int i = 0; i < 4; i++) {
            int digit = at < text.length() ? Character.digit(text.charAt(at), 16) : -1;
            if (digit < 0) {
                throw error("four hex digits after \\u");
            }
            value = value * 16 + digit;
            at++;
        }
        return value;
    }

    private Object number()
    {
        int start = at;
        boolean integer = true;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
            if (isDigit(peek())) {
                throw error("no leading zero in a number");
            }
        }
        else if (isDigit(peek())) {
            digits();
        }
        else {
            throw error("a digit");
        }
        if (peek() == '.') {
            integer = false;
            at++;
            if (!isDigit(peek())) {
                throw error("a digit after the decimal point");
            }
            digits();
        }
        if (peek() == 'e' || peek() == 'E') {
            integer = false;
            at++;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!isDigit(peek())) {
                throw error("a digit in the exponent");
            }
            digits();
        }
        String literal = text.substring(start, at);
        if (integer) {
            try {
                return Long.parseLong(literal);
            }
            catch (NumberFormatException tooLarge) {
                // falls through to an exact BigDecimal
            }
        }
        try {
            return new BigDecimal(literal);
        }
        catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(source + ": invalid JSON at offset " + start + ": number " + abbreviate(literal)
                    + " is out of range", e);
        }
    }

    private void digits()
    {
        while (isDigit(peek())) {
            at++;
        }
    }

    private static boolean isDigit(int c)
    {
        return c >= '0' && c <= '9';
    }

    private Object literal(String word, Object value)
    {
        if (!text.startsWith(word, at)) {
            throw error("'" + word + "'");
        }
        at += word.length();
        return value;
    }

    private void expect(char c, String what)
    {
        if (peek() != c) {
            throw error(what);
        }
        at++;
    }

    /** The character at the cursor, or -1 at the end. */
    private int peek()
    {
        return at < text.length() ? text.charAt(at) : -1;
    }

    private void skipWhitespace()
    {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private IllegalArgumentException error(String expected)
    {
        String found = at >= text.length() ? "the end of input (truncated?)" : describe(text.codePointAt(at));
        return new IllegalArgumentException(source + ": invalid JSON at offset " + at + ": expected " + expected + ", found " + found);
    }

    private static String describe(int codePoint)
    {
        if (codePoint < 0x20 || codePoint == 0x7f) {
            return String.format("character U+%04X", codePoint);
        }
        return "'" + Character.toString(codePoint) + "'";
    }

    private static String abbreviate(String literal)
    {
        return literal.length() <= 40 ? literal : literal.substring(0, 40) + "…";
    }
}
