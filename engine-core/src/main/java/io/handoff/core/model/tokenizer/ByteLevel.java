package io.handoff.core.model.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * GPT-2's byte-to-character map: byte-level BPE vocabularies spell every byte as a printable character
 * (printable Latin-1 bytes as themselves, the rest as U+0100 onwards in byte order), so a token string
 * never holds a space or a control character.
 */
public final class ByteLevel
{
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[512];

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = (char) (printable ? b : next++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private ByteLevel() {}

    /** The character that spells byte {@code b} (0..255). */
    public static char charOf(int b)
    {
        return BYTE_TO_CHAR[b];
    }

    /**
     * The text's UTF-8 bytes, each spelt as its character. A lone surrogate (which JSON input can carry) is
     * spelt as U+FFFD's bytes, as JavaScript's TextEncoder does, where {@link String#getBytes} would write '?'.
     */
    public static String encode(String text)
    {
        byte[] bytes = withoutLoneSurrogates(text).getBytes(StandardCharsets.UTF_8);
        char[] chars = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            chars[i] = BYTE_TO_CHAR[bytes[i] & 0xff];
        }
        return new String(chars);
    }

    /** The text with each lone surrogate replaced by U+FFFD, which is what its UTF-8 encoding can stand for. */
    static String withoutLoneSurrogates(String text)
    {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean paired = Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
            if (paired) {
                if (out != null) {
                    out.append(c).append(text.charAt(i + 1));
                }
                i++;
            }
            else if (Character.isSurrogate(c)) {
                if (out == null) {
                    out = new StringBuilder(text.length()).append(text, 0, i);
                }
                out.append('\uFFFD');
            }
            else if (out != null) {
                out.append(c);
            }
        }
        return out == null ? text : out.toString();
    }

    /** The bytes a token string spells, or null when a character is not in the map (not a byte-level token). */
    static byte[] decode(String token)
    {
        ByteArrayOutputStream out = new ByteArrayOutputStream(token.length());
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            int b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
            if (b < 0) {
                return null;
            }
            out.write(b);
        }
        return out.toByteArray();
    }
}
