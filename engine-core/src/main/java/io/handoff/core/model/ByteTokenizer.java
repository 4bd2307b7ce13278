package io.handoff.core.model;

import io.handoff.core.model.tokenizer.Tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Byte-level tokenizer: a token is one UTF-8 byte (ids 0..255), plus three specials. Decoding skips
 * specials and replaces invalid UTF-8 (a sequence a model may well generate) with U+FFFD. The tiny
 * seeded models use it; {@link #encode(String)} adds no BOS, {@link #encodePrompt} does.
 */
public final class ByteTokenizer
        implements Tokenizer
{
    public static final int BOS = 256;
    public static final int EOS = 257;
    public static final int PAD = 258;
    public static final int VOCAB_SIZE = 259;

    public int[] encode(String text)
    {
        return encode(text, false);
    }

    /** The text's UTF-8 bytes as ids, after a {@link #BOS} when {@code addBos}. */
    @Override
    public int[] encode(String text, boolean addBos)
    {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int offset = addBos ? 1 : 0;
        int[] ids = new int[bytes.length + offset];
        if (addBos) {
            ids[0] = BOS;
        }
        for (int i = 0; i < bytes.length; i++) {
            ids[i + offset] = bytes[i] & 0xff;
        }
        return ids;
    }

    @Override
    public String decode(int[] ids)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(ids.length);
        for (int id : ids) {
            if (id < 0 || id >= VOCAB_SIZE) {
                throw new IllegalArgumentException("token id " + id + " is outside the byte vocabulary 0.." + (VOCAB_SIZE - 1));
            }
            if (id < 256) {
                bytes.write(id);
            }
        }
        // String's UTF-8 decoder replaces malformed input with U+FFFD
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public byte[] tokenBytes(int id)
    {
        if (id < 0 || id >= VOCAB_SIZE) {
            throw new IllegalArgumentException("token id " + id + " is outside the byte vocabulary 0.." + (VOCAB_SIZE - 1));
        }
        return id < 256 ? new byte[] {(byte) id} : new byte[0];
    }

    /** {@code <s>}, {@code </s>} and {@code <pad>}, as Llama-style vocabularies write them. */
    @Override
    public String specialTokenText(int id)
    {
        return switch (id) {
            case BOS -> "<s>";
            case EOS -> "</s>";
            case PAD -> "<pad>";
            default -> {
                tokenBytes(id); // checks the id
                yield "";
            }
        };
    }

    @Override
    public Set<Integer> eosTokenIds()
    {
        return Set.of(EOS);
    }

    @Override
    public OptionalInt bosTokenId()
    {
        return OptionalInt.of(BOS);
    }

    @Override
    public int vocabSize()
    {
        return VOCAB_SIZE;
    }

    @Override
    public boolean isSpecial(int id)
    {
        return id >= 256 && id < VOCAB_SIZE;
    }
}
