package io.handoff.http.fields;

import io.handoff.core.model.tokenizer.Tokenizer;

import java.nio.charset.StandardCharsets;

import static java.util.Objects.requireNonNull;

/**
 * A token on its own, as log-probability entries show it: its bytes (a special token's are how it is written), and
 * its text, those bytes decoded with U+FFFD for a part of a UTF-8 character, as SGLang's and vLLM's detokenizers give
 * a token that is not whole UTF-8 on its own (the bytes then say what it is).
 */
public interface TokenTexts
{
    byte[] bytes(int id);

    default String text(int id)
    {
        return new String(bytes(id), StandardCharsets.UTF_8);
    }

    static TokenTexts of(Tokenizer tokenizer)
    {
        requireNonNull(tokenizer, "tokenizer is null");
        return id -> tokenizer.isSpecial(id) ? tokenizer.specialTokenText(id).getBytes(StandardCharsets.UTF_8) : tokenizer.tokenBytes(id);
    }
}
