package io.handoff.core.model.tokenizer;

import java.util.OptionalInt;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A tokenizer whose prompts start with the model's BOS although its files add none: a Hugging Face checkpoint whose
 * {@code config.json} names a {@code bos_token_id} while {@code tokenizer.json} has no template that adds it and
 * {@code tokenizer_config.json} says nothing of {@code add_bos_token} (copies of Llama 3's files are like this). Its
 * model was trained with BOS-led sequences, and llama.cpp prepends it on the same weights. {@link #encode} keeps the
 * files' own semantics; only {@link #encodePrompt} differs.
 */
public final class PromptBos
        implements Tokenizer
{
    private final Tokenizer tokenizer;
    private final int bos;

    public PromptBos(Tokenizer tokenizer, int bos)
    {
        this.tokenizer = requireNonNull(tokenizer, "tokenizer is null");
        if (bos < 0 || bos >= tokenizer.vocabSize() || !tokenizer.isSpecial(bos)) {
            throw new IllegalArgumentException("bos_token_id " + bos + " is not a special token of the tokenizer (" + tokenizer.vocabSize()
                    + " ids)");
        }
        this.bos = bos;
    }

    @Override
    public int[] encode(String text, boolean addSpecialTokens)
    {
        return tokenizer.encode(text, addSpecialTokens);
    }

    @Override
    public int[] encodePrompt(String text)
    {
        int[] ids = tokenizer.encodePrompt(text);
        if (ids.length > 0 && ids[0] == bos) {
            return ids;
        }
        int[] prompt = new int[ids.length + 1];
        prompt[0] = bos;
        System.arraycopy(ids, 0, prompt, 1, ids.length);
        return prompt;
    }

    @Override
    public byte[] tokenBytes(int id)
    {
        return tokenizer.tokenBytes(id);
    }

    @Override
    public String specialTokenText(int id)
    {
        return tokenizer.specialTokenText(id);
    }

    @Override
    public Set<Integer> eosTokenIds()
    {
        return tokenizer.eosTokenIds();
    }

    @Override
    public OptionalInt bosTokenId()
    {
        return OptionalInt.of(bos);
    }

    @Override
    public int vocabSize()
    {
        return tokenizer.vocabSize();
    }

    @Override
    public boolean isSpecial(int id)
    {
        return tokenizer.isSpecial(id);
    }
}
