package io.handoff.core.model.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Text to token ids and back for one model. Decoding works on bytes ({@link #tokenBytes}) because a
 * byte-level token may hold part of a UTF-8 character; {@link #decode} and {@link StreamingDecoder}
 * replace invalid UTF-8 with U+FFFD the same way, so streamed pieces add up to the decoded whole.
 */
public interface Tokenizer
{
    /**
     * The ids of {@code text}. Special tokens written in the text are matched as such; with
     * {@code addSpecialTokens} the model's own rules add what a prompt starts with (a BOS when the
     * tokenizer's files ask for one).
     */
    int[] encode(String text, boolean addSpecialTokens);

    /** The ids of a prompt: {@link #encode(String, boolean)} with the model's special tokens. */
    default int[] encodePrompt(String text)
    {
        return encode(text, true);
    }

    /** The bytes a token stands for in output text; empty for special tokens, which have no text. */
    byte[] tokenBytes(int id);

    /**
     * How a special token is written (e.g. {@code <|eot_id|>}), for output that shows special tokens (a request with
     * {@code skip_special_tokens} false); empty for other tokens and for a special token that has no written form.
     */
    default String specialTokenText(int id)
    {
        return "";
    }

    /** The id of the special token written {@code text} (e.g. {@code [TOOL_CALLS]}), when this tokenizer has one. */
    default OptionalInt specialTokenId(String text)
    {
        int[] ids = encode(text, false);
        return ids.length == 1 && isSpecial(ids[0]) && specialTokenText(ids[0]).equals(text) ? OptionalInt.of(ids[0]) : OptionalInt.empty();
    }

    /** The text of {@code ids}, specials skipped, invalid UTF-8 replaced with U+FFFD. */
    default String decode(int[] ids)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(ids.length * 4);
        for (int id : ids) {
            bytes.writeBytes(tokenBytes(id));
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** A decoder for one output stream, which emits only complete characters. */
    default StreamingDecoder streamingDecoder()
    {
        return new StreamingDecoder(this);
    }

    /** Ids that end generation unless a request ignores EOS. */
    Set<Integer> eosTokenIds();

    /** The beginning-of-sequence id, when the model has one. */
    OptionalInt bosTokenId();

    int vocabSize();

    boolean isSpecial(int id);
}
