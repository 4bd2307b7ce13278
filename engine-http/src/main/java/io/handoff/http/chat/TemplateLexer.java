package io.handoff.http.chat;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a chat template into text, {@code {{ output }}} and {@code {% tag %}} pieces (comments dropped),
 * applying Jinja's whitespace control the way transformers configures it: {@code -} strips all whitespace
 * on that side, {@code trim_blocks} drops the newline after a tag, {@code lstrip_blocks} drops the
 * indentation before a tag that starts its line (unless opened with {@code +}), newlines are normalised
 * to {@code \n} and one final newline is dropped ({@code keep_trailing_newline=False}).
 */
final class TemplateLexer
{
    sealed interface Piece
            permits Text, Output, Tag {}

    record Text(String text)
            implements Piece {}

    record Output(String source, int line)
            implements Piece {}

    record Tag(String source, int line)
            implements Piece {}

    private TemplateLexer() {}

    static List<Piece> split(String template)
    {
        String source = template.replace("\r\n", "\n").replace('\r', '\n');
        if (source.endsWith("\n")) {
            source = source.substring(0, source.length() - 1);
        }
        List<Piece> pieces = new ArrayList<>();
        int pos = 0;
        boolean stripLeading = false;
        boolean trimNewline = false;
        while (true) {
            int open = findOpen(source, pos);
            int start = pos;
            if (trimNewline && !stripLeading && source.startsWith("\n", start)) {
                start++;
            }
            String text = source.substring(start, open < 0 ? source.length() : open);
            if (stripLeading) {
                text = text.stripLeading();
            }
            if (open < 0) {
                add(pieces, text);
                return pieces;
            }
            char kind = source.charAt(open + 1);
            char modifier = open + 2 < source.length() ? source.charAt(open + 2) : ' ';
            if (modifier == '-') {
                text = text.stripTrailing();
            }
            else if (kind != '{' && modifier != '+') {
                text = lstripBlock(source, start, text);
            }
            add(pieces, text);
            int line = line(source, open);
            int close = findClose(source, open + 2, kind);
            if (close < 0) {
                throw new ChatTemplateException("chat template: the " + source.substring(open, open + 2) + " opened on line " + line + " is never closed");
            }
            int innerStart = open + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
            boolean closeMinus = close - 1 >= innerStart && source.charAt(close - 1) == '-';
            String inner = source.substring(innerStart, Math.max(innerStart, close - (closeMinus ? 1 : 0))).strip();
            switch (kind) {
                case '{' -> pieces.add(new Output(inner, line));
                case '%' -> pieces.add(new Tag(inner, line));
                default -> {} // a comment
            }
            pos = close + 2;
            stripLeading = closeMinus;
            trimNewline = kind != '{';
        }
    }

    /** lstrip_blocks: the spaces and tabs between a line's start and a tag go, when nothing else is there. */
    private static String lstripBlock(String source, int textStart, String text)
    {
        int lineStart = text.lastIndexOf('\n') + 1;
        boolean atLineStart = lineStart > 0 || textStart == 0 || source.charAt(textStart - 1) == '\n';
        if (!atLineStart) {
            return text;
        }
        for (int i = lineStart; i < text.length(); i++) {
            if (text.charAt(i) != ' ' && text.charAt(i) != '\t') {
                return text;
            }
        }
        return text.substring(0, lineStart);
    }

    private static void add(List<Piece> pieces, String text)
    {
        if (!text.isEmpty()) {
            pieces.add(new Text(text));
        }
    }

    private static int findOpen(String source, int from)
    {
        for (int i = source.indexOf('{', from); i >= 0 && i + 1 < source.length(); i = source.indexOf('{', i + 1)) {
            char next = source.charAt(i + 1);
            if (next == '{' || next == '%' || next == '#') {
                return i;
            }
        }
        return -1;
    }

    /** The index of the closing {@code }}}, {@code %}} or {@code #}}, skipping quoted strings inside an expression. */
    private static int findClose(String source, int from, char kind)
    {
        char end = kind == '{' ? '}' : kind;
        for (int i = from; i + 1 < source.length(); i++) {
            char c = source.charAt(i);
            if (kind != '#' && (c == '\'' || c == '"')) {
                int j = i + 1;
                while (j < source.length() && source.charAt(j) != c) {
                    j += source.charAt(j) == '\\' ? 2 : 1;
                }
                i = j;
            }
            else if (c == end && source.charAt(i + 1) == '}') {
                return i;
            }
        }
        return -1;
    }

    static int line(String source, int index)
    {
        int line = 1;
        for (int i = 0; i < index && i < source.length(); i++) {
            if (source.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }
}
