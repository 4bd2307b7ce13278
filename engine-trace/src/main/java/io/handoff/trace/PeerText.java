package io.handoff.trace;

/**
 * Text a peer chose (a host id, a request id, a refusal reason) made safe to put in a log line: control characters,
 * line and paragraph separators and bidirectional overrides become Java-style escapes (a backslash, 'u', four hex
 * digits), so a peer cannot end a line and forge the next one, and it is clipped to a length, so it cannot flood one.
 */
public final class PeerText
{
    public static final int MAX_CHARS = 200;

    private PeerText() {}

    public static String clean(String text)
    {
        return clean(text, MAX_CHARS);
    }

    public static String clean(String text, int maxChars)
    {
        if (text == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(Math.min(text.length(), maxChars) + 16);
        int i = 0;
        for (; i < text.length() && out.length() < maxChars; i++) {
            char c = text.charAt(i);
            if (unsafe(c)) {
                out.append(String.format("\\u%04x", (int) c));
            }
            else {
                out.append(c);
            }
        }
        if (i < text.length()) {
            out.append("...(").append(text.length()).append(" chars)");
        }
        return out.toString();
    }

    /**
     * {@code text} with each character that could break or disguise a line replaced by '?', one for one (so a length
     * bound the text met still holds): what a message from the network keeps of a free-text field.
     */
    public static String printable(String text)
    {
        if (text == null) {
            return null;
        }
        for (int i = 0; i < text.length(); i++) {
            if (breaksLines(text.charAt(i))) {
                StringBuilder out = new StringBuilder(text);
                for (int j = i; j < out.length(); j++) {
                    if (breaksLines(out.charAt(j))) {
                        out.setCharAt(j, '?');
                    }
                }
                return out.toString();
            }
        }
        return text;
    }

    private static boolean unsafe(char c)
    {
        // a backslash is escaped too, so an escape in the output always stands for a character of the input
        return breaksLines(c) || c == '\\';
    }

    private static boolean breaksLines(char c)
    {
        return Character.isISOControl(c)
                || c == '\u2028' || c == '\u2029'
                || (c >= '\u202a' && c <= '\u202e')
                || (c >= '\u2066' && c <= '\u2069');
    }
}
