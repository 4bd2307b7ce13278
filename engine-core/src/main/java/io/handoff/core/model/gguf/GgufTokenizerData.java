package io.handoff.core.model.gguf;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * A GGUF file's tokenizer as written under {@code tokenizer.ggml.*}, for a tokenizer implementation to
 * build from: nothing here tokenizes. Unwritten keys take llama.cpp's defaults for the model.
 *
 * @param model {@code gpt2} (byte-level BPE with merges) or {@code llama} (SentencePiece BPE by piece scores)
 * @param pre the pre-tokenizer name ({@code llama-bpe}, {@code qwen2}, …), {@code default} when unwritten
 * @param scores {@code tokenizer.ggml.scores}, one per token (SentencePiece merges the best-scored piece first);
 *         empty when unwritten, which llama.cpp reads as every score 0
 * @param merges BPE merges as {@code "left right"}, empty when unwritten
 * @param tokenTypes ggml token types per token (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
 *         6 byte), empty when unwritten
 * @param bos the beginning-of-sequence token id, -1 when unwritten
 * @param eos the end-of-sequence token id, -1 when unwritten
 * @param addBos {@code tokenizer.ggml.add_bos_token}; when unwritten, true for {@code llama} and false for {@code gpt2}
 * @param addEos {@code tokenizer.ggml.add_eos_token}; false when unwritten
 * @param addSpacePrefix {@code tokenizer.ggml.add_space_prefix}: SentencePiece's space before the text; when
 *         unwritten, true for {@code llama} and false for {@code gpt2}
 */
public record GgufTokenizerData(String model, String pre, List<String> tokens, List<Float> scores, List<String> merges,
                                List<Integer> tokenTypes, int bos, int eos, boolean addBos, boolean addEos, boolean addSpacePrefix,
                                Optional<String> chatTemplate)
{
    public static final Set<String> MODELS = Set.of("gpt2", "llama");

    public GgufTokenizerData
    {
        requireNonNull(model, "model is null");
        requireNonNull(pre, "pre is null");
        tokens = List.copyOf(tokens);
        scores = List.copyOf(scores);
        merges = List.copyOf(merges);
        tokenTypes = List.copyOf(tokenTypes);
        requireNonNull(chatTemplate, "chatTemplate is null");
    }

    public static GgufTokenizerData read(GgufFile file)
    {
        GgufMetadata m = file.metadata();
        String model = m.string("tokenizer.ggml.model");
        if (!MODELS.contains(model)) {
            throw new IllegalArgumentException(file.path() + ": tokenizer.ggml.model is '" + model + "'; the engine reads gpt2 (BPE) "
                    + "and llama (SentencePiece) tokenizers");
        }
        boolean spm = model.equals("llama");
        List<String> tokens = m.optionalStrings(GgufModel.TOKENS_KEY).orElseThrow(() -> new IllegalArgumentException(file.path()
                + ": metadata key '" + GgufModel.TOKENS_KEY + "' (ARRAY of STRING) is missing; the file lacks its vocabulary"));
        List<Integer> types = m.optionalInts("tokenizer.ggml.token_type").orElse(List.of());
        if (!types.isEmpty() && types.size() != tokens.size()) {
            throw new IllegalArgumentException(file.path() + ": tokenizer.ggml.token_type has " + types.size() + " entries for "
                    + tokens.size() + " tokens; the file is corrupt");
        }
        List<Float> scores = m.optionalFloats("tokenizer.ggml.scores").orElse(List.of());
        if (!scores.isEmpty() && scores.size() != tokens.size()) {
            throw new IllegalArgumentException(file.path() + ": tokenizer.ggml.scores has " + scores.size() + " entries for "
                    + tokens.size() + " tokens; the file is corrupt");
        }
        return new GgufTokenizerData(model, m.optionalString("tokenizer.ggml.pre").orElse("default"), tokens, scores,
                m.optionalStrings("tokenizer.ggml.merges").orElse(List.of()), types,
                tokenId(file, "tokenizer.ggml.bos_token_id", tokens.size()), tokenId(file, "tokenizer.ggml.eos_token_id", tokens.size()),
                m.optionalBool("tokenizer.ggml.add_bos_token").orElse(spm), m.optionalBool("tokenizer.ggml.add_eos_token").orElse(false),
                m.optionalBool("tokenizer.ggml.add_space_prefix").orElse(spm), m.optionalString("tokenizer.chat_template"));
    }

    private static int tokenId(GgufFile file, String key, int vocab)
    {
        if (!file.metadata().contains(key)) {
            return -1;
        }
        if (vocab == 0) {
            throw new IllegalArgumentException(file.path() + ": " + key + " is set but the vocabulary is empty; the file is corrupt");
        }
        return file.metadata().intValue(key, 0, vocab - 1);
    }
}
