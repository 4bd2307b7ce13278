package io.handoff.core.model.tokenizer;

/**
 * A hand-made byte-level BPE {@code tokenizer.json}: a dozen letters, {@code Ã}/{@code ©} (the bytes of
 * "é"), eleven merges that build "hello", " the" and " world", and three added tokens, of which
 * {@code <|eo} is a prefix of {@code <|eos|>} so longest-first matching matters. 27 ids.
 */
final class TinyTokenizerJson
{
    static final int HELLO = 14;
    static final int SPACE_THE = 16;
    static final int SPACE_WORLD = 21;
    static final int E_ACUTE_FIRST = 9;
    static final int E_ACUTE_SECOND = 10;
    static final int BOS = 22;
    static final int EOS = 23;
    static final int EO = 24;
    static final int HEL = 25;
    static final int SPACE = 8;

    private TinyTokenizerJson() {}

    /**
     * @param postProcessor the {@code post_processor} value as JSON ({@code null} for none)
     * @param ignoreMerges Llama 3's {@code ignore_merges}: a word in the vocabulary is one token without merging
     */
    static String json(String postProcessor, boolean ignoreMerges)
    {
        return """
                {"version": "1.0", "truncation": null, "padding": null,
                 "added_tokens": [
                  {"id": 22, "content": "<|bos|>", "special": true},
                  {"id": 23, "content": "<|eos|>", "special": true},
                  {"id": 24, "content": "<|eo", "special": false}],
                 "normalizer": null,
                 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
                 "post_processor": %s,
                 "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
                 "model": {"type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": %s,
                  "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "w": 4, "r": 5, "d": 6, "t": 7, "\u0120": 8, "\u00c3": 9, "\u00a9": 10,
                   "he": 11, "ll": 12, "hell": 13, "hello": 14, "\u0120t": 15, "\u0120the": 16, "\u0120w": 17, "or": 18,
                   "\u0120wor": 19, "ld": 20, "\u0120world": 21, "hel": 25, "!": 26},
                  "merges": ["h e", ["l", "l"], "he ll", "hell o", "\u0120 t", "\u0120t he", "\u0120 w", "o r", "\u0120w or", "l d",
                   ["\u0120wor", "ld"]]}}
                """.formatted(postProcessor, ignoreMerges);
    }

    static String bosTemplate()
    {
        return """
                {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                 "pair": [],
                 "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [22], "tokens": ["<|bos|>"]}}}
                """;
    }
}
