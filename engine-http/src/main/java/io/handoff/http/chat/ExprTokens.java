package io.handoff.http.chat;

import java.util.ArrayList;
import java.util.List;

/** The tokens of one tag or output expression, with a cursor for {@link TemplateParser}. */
final class ExprTokens
{
    enum Kind { NAME, STRING, INTEGER, FLOAT, OP, END }

    record Token(Kind kind, String text) {}

    private static final List<String> OPERATORS = List.of("**", "//", "==", "!=", "<=", ">=",
            "+", "-", "*", "/", "%", "~", "<", ">", "=", "|", ".", ",", ":", "(", ")", "[", "]", "{", "}");

    private final List<Token> tokens;
    private final String source;
    private final int line;
    private int next;

    ExprTokens(String source, int line)
    {
        this.source = source;
        this.line = line;
        this.tokens = tokenize(source, line);
    }

    Token peek()
    {
        return tokens.get(next);
    }

    Token peek(int ahead)
    {
        return tokens.get(Math.min(next + ahead, tokens.size() - 1));
    }

    Token take()
    {
        Token token = tokens.get(next);
        if (token.kind() != Kind.END) {
            next++;
        }
        return token;
    }

    /** True (and consumed) when the next token is the operator or keyword {@code text}. */
    boolean accept(String text)
    {
        Token token = peek();
        if ((token.kind() == Kind.OP || token.kind() == Kind.NAME) && token.text().equals(text)) {
            next++;
            return true;
        }
        return false;
    }

    void expect(String text)
    {
        if (!accept(text)) {
            throw error("expected '" + text + "' but found " + describe(peek()));
        }
    }

    String name()
    {
        Token token = take();
        if (token.kind() != Kind.NAME) {
            throw error("expected a name but found " + describe(token));
        }
        return token.text();
    }

    boolean atEnd()
    {
        return peek().kind() == Kind.END;
    }

    void expectEnd()
    {
        if (!atEnd()) {
            throw error("unexpected " + describe(peek()));
        }
    }

    ChatTemplateException error(String message)
    {
        return new ChatTemplateException("chat template line " + line + ", in '" + source + "': " + message);
    }

    private static String describe(Token token)
    {
        return token.kind() == Kind.END ? "the end of the tag" : "'" + token.text() + "'";
    }

    private static List<Token> tokenize(String source, int line)
    {
        List<Token> tokens = new ArrayList<>();
        int i = 0;
        while (i < source.length()) {
            char c = source.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
            }
            else if (Character.isLetter(c) || c == '_') {
                int j = i;
                while (j < source.length() && (Character.isLetterOrDigit(source.charAt(j)) || source.charAt(j) == '_')) {
                    j++;
                }
                tokens.add(new Token(Kind.NAME, source.substring(i, j)));
                i = j;
            }
            else if (Character.isDigit(c)) {
                int j = i;
                while (j < source.length() && (Character.isDigit(source.charAt(j)) || source.charAt(j) == '_')) {
                    j++;
                }
                boolean fraction = j + 1 < source.length() && source.charAt(j) == '.' && Character.isDigit(source.charAt(j + 1));
                if (fraction) {
                    j++;
                    while (j < source.length() && Character.isDigit(source.charAt(j))) {
                        j++;
                    }
                }
                tokens.add(new Token(fraction ? Kind.FLOAT : Kind.INTEGER, source.substring(i, j).replace("_", "")));
                i = j;
            }
            else if (c == '\'' || c == '"') {
                i = string(source, i, line, tokens);
            }
            else {
                int at = i;
                String op = OPERATORS.stream().filter(o -> source.startsWith(o, at)).findFirst().orElseThrow(() ->
                        new ChatTemplateException("chat template line " + line + ": unexpected character '" + c + "' in '" + source + "'"));
                tokens.add(new Token(Kind.OP, op));
                i += op.length();
            }
        }
        tokens.add(new Token(Kind.END, ""));
        return tokens;
    }

    /** A quoted string with Python's common escapes; returns the index after its closing quote. */
    private static int string(String source, int start, int line, List<Token> tokens)
    {
        char quote = source.charAt(start);
        StringBuilder text = new StringBuilder();
        int i = start + 1;
        while (i < source.length() && source.charAt(i) != quote) {
            char c = source.charAt(i);
            if (c == '\\' && i + 1 < source.length()) {
                char e = source.charAt(++i);
                switch (e) {
                    case 'n' -> text.append('\n');
                    case 't' -> text.append('\t');
                    case 'r' -> text.append('\r');
                    case '0' -> text.append('\0');
                    case 'u' -> {
                        text.append((char) Integer.parseInt(source.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                    case '\\', '\'', '"' -> text.append(e);
                    default -> text.append('\\').append(e);
                }
            }
            else {
                text.append(c);
            }
            i++;
        }
        if (i >= source.length()) {
            throw new ChatTemplateException("chat template line " + line + ": unterminated string in '" + source + "'");
        }
        tokens.add(new Token(Kind.STRING, text.toString()));
        return i + 1;
    }
}
