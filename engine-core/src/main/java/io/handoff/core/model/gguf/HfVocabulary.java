package io.handoff.core.model.gguf;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A byte-level BPE {@code tokenizer.json} as llama.cpp's converter writes it to GGUF: every id's text (a vocabulary smaller
 * than the model's padded with {@code [PADn]}), its type (1 normal, 3 control for special and {@code <|...|>}-shaped
 * added tokens, 4 user-defined for other added tokens, 5 unused for padding), the merges, and the pre-tokenizer's
 * llama.cpp name, told by its split.
 */
record HfVocabulary(List<String> tokens, List<Integer> types, List<String> merges, String pre, boolean addBos)
{
    // tokenizer.json splits and the names llama.cpp gives them
    private static final Map<String, String> PRE = Map.of(
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", "llama-bpe",
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", "qwen2");

    /**
     * @param configBos config.json's {@code bos_token_id}: as Handoff reads a checkpoint, a BOS is added to prompts when
     *                  tokenizer_config.json does not say {@code add_bos_token} and config.json names one (or the tokenizer's
     *                  post-processor adds it)
     */
    static HfVocabulary read(Map<String, Object> json, Map<String, Object> tokenizerConfig, Object configBos, String source, int vocabSize)
    {
        Map<String, Object> model = object(json.get("model"), source + " model");
        if (!"BPE".equals(model.get("type"))) {
            throw new IllegalArgumentException(source + ": model type " + model.get("type") + " is not converted; a byte-level BPE tokenizer is");
        }
        Map<String, Object> vocab = object(model.get("vocab"), source + " model.vocab");
        int size = vocabSize;
        for (Object id : vocab.values()) {
            size = Math.max(size, ((Number) id).intValue() + 1);
        }
        List<?> added = json.get("added_tokens") instanceof List<?> list ? list : List.of();
        for (Object token : added) {
            size = Math.max(size, ((Number) object(token, source + " added_tokens").get("id")).intValue() + 1);
        }
        String[] tokens = new String[size];
        Integer[] types = new Integer[size];
        vocab.forEach((token, id) -> {
            tokens[((Number) id).intValue()] = token;
            types[((Number) id).intValue()] = 1;
        });
        for (Object item : added) {
            Map<String, Object> token = object(item, source + " added_tokens");
            int id = ((Number) token.get("id")).intValue();
            String content = String.valueOf(token.get("content"));
            tokens[id] = content;
            boolean special = Boolean.TRUE.equals(token.get("special"));
            types[id] = special || content.matches("<[|｜].*[|｜]>") ? 3 : 4;
        }
        for (int id = 0; id < size; id++) {
            if (tokens[id] == null) {
                tokens[id] = "[PAD" + id + "]";
                types[id] = 5;
            }
        }
        List<String> merges = new ArrayList<>();
        for (Object merge : model.get("merges") instanceof List<?> list ? list : List.of()) {
            merges.add(merge instanceof List<?> pair ? pair.get(0) + " " + pair.get(1) : String.valueOf(merge));
        }
        Object post = json.get("post_processor");
        Object bosToken = tokenizerConfig.get("bos_token");
        String bosText = bosToken instanceof Map<?, ?> m ? String.valueOf(m.get("content")) : bosToken instanceof String s ? s : null;
        boolean addBos = tokenizerConfig.get("add_bos_token") instanceof Boolean b ? b
                : configBos instanceof Number || bosText != null && post != null && String.valueOf(post).contains(bosText);
        return new HfVocabulary(Arrays.asList(tokens), Arrays.asList(types), merges, pre(json.get("pre_tokenizer"), source), addBos);
    }

    /** The id of the token config.json names by id, or else tokenizer_config.json by text; -1 for none. */
    int id(Object configId, Object tokenText)
    {
        if (configId instanceof Number n) {
            return n.intValue();
        }
        if (configId instanceof List<?> list && !list.isEmpty() && list.getFirst() instanceof Number n) {
            return n.intValue();
        }
        String text = tokenText instanceof Map<?, ?> m ? String.valueOf(m.get("content")) : tokenText instanceof String s ? s : null;
        return text == null ? -1 : tokens.indexOf(text);
    }

    private static String pre(Object value, String source)
    {
        Map<String, Object> pre = object(value, source + " pre_tokenizer");
        List<?> steps = "Sequence".equals(pre.get("type")) && pre.get("pretokenizers") instanceof List<?> list ? list : List.of(pre);
        List<String> splits = new ArrayList<>();
        boolean byteLevelRegex = false;
        for (Object item : steps) {
            Map<String, Object> step = object(item, source + " pre_tokenizer");
            if ("Split".equals(step.get("type")) && step.get("pattern") instanceof Map<?, ?> pattern && pattern.get("Regex") instanceof String regex) {
                splits.add(regex);
            }
            else if ("ByteLevel".equals(step.get("type"))) {
                byteLevelRegex |= !Boolean.FALSE.equals(step.get("use_regex"));
            }
        }
        if (splits.isEmpty() && byteLevelRegex) {
            return "gpt2";
        }
        if (splits.size() == 1 && PRE.containsKey(splits.getFirst())) {
            return PRE.get(splits.getFirst());
        }
        throw new IllegalArgumentException(source + ": its pre-tokenizer split " + splits + " is not one this converter names (Llama 3's, Qwen2's, "
                + "GPT-2's); convert the checkpoint with llama.cpp's convert_hf_to_gguf.py, then quantize the GGUF file");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String what)
    {
        if (value instanceof Map<?, ?> map) {
            return (Map<String, Object>) map;
        }
        throw new IllegalArgumentException(what + " is not a JSON object");
    }
}
