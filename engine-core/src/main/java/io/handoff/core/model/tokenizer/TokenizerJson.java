package io.handoff.core.model.tokenizer;

import io.handoff.core.json.JsonFile;
import io.handoff.core.model.tokenizer.BpeTokenizer.AddedToken;

import java.nio.file.Files;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads a Hugging Face model directory's tokenizer: {@code tokenizer.json} (a byte-level BPE model, its
 * added tokens, pre-tokenizer and post-processor), {@code tokenizer_config.json} (BOS/EOS token names and
 * {@code add_bos_token}, used when {@code tokenizer.json} has no {@code TemplateProcessing}) and
 * {@code generation_config.json} (the EOS ids generation stops on, which win over the tokenizer's).
 * What it does not implement (other normalizers, models and pre-tokenizers; added-token stripping) is refused by name.
 */
public final class TokenizerJson
{
    public static final String FILE = "tokenizer.json";
    public static final String CONFIG_FILE = "tokenizer_config.json";
    public static final String GENERATION_CONFIG_FILE = "generation_config.json";
    private static final int MAX_TOKENIZER_BYTES = 128 * 1024 * 1024;
    private static final int MAX_CONFIG_BYTES = 16 * 1024 * 1024;

    private TokenizerJson() {}

    public static BpeTokenizer read(Path directory)
    {
        Path file = directory.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(directory + " has no " + FILE + "; the engine reads a model's tokenizer from it "
                    + "(sentencepiece tokenizer.model files are not read)");
        }
        Map<String, Object> json = JsonFile.readObject(file, MAX_TOKENIZER_BYTES);
        Map<String, Object> config = optional(directory.resolve(CONFIG_FILE));
        Map<String, Object> generation = optional(directory.resolve(GENERATION_CONFIG_FILE));
        return parse(json, config, generation, file.toString());
    }

    private static Map<String, Object> optional(Path file)
    {
        return Files.isRegularFile(file) ? JsonFile.readObject(file, MAX_CONFIG_BYTES) : Map.of();
    }

    /** @param config tokenizer_config.json's object (empty when absent); {@code generation} likewise */
    public static BpeTokenizer parse(Map<String, Object> json, Map<String, Object> config, Map<String, Object> generation, String source)
    {
        List<Normalizer.Form> normalization = normalizer(json.get("normalizer"), source);
        Map<String, Object> model = object(json.get("model"), source, "model");
        String modelType = String.valueOf(model.get("type"));
        if (!modelType.equals("BPE")) {
            throw new IllegalArgumentException(source + ": model type " + modelType + " is not supported; supported: BPE (byte-level)");
        }
        Object decoder = json.get("decoder");
        if (decoder != null && !type(decoder).equals("ByteLevel")) {
            throw new IllegalArgumentException(source + ": decoder " + type(decoder) + " is not supported; supported: ByteLevel");
        }
        Map<String, Object> vocab = object(model.get("vocab"), source, "model.vocab");
        List<AddedToken> added = addedTokens(json.get("added_tokens"), source);
        int size = 0;
        for (Map.Entry<String, Object> e : vocab.entrySet()) {
            size = Math.max(size, id(e.getValue(), source, "model.vocab \"" + e.getKey() + "\"") + 1);
        }
        for (AddedToken token : added) {
            size = Math.max(size, token.id() + 1);
        }
        String[] tokens = new String[size];
        vocab.forEach((token, id) -> tokens[(int) (long) (Long) id] = token);
        added.forEach(token -> tokens[token.id()] = token.content());
        List<String[]> merges = new ArrayList<>();
        for (Object merge : list(model.getOrDefault("merges", List.of()), source, "model.merges")) {
            merges.add(mergePair(merge, source + " model.merges"));
        }
        PreTokenizer preTokenizer = preTokenizer(json.get("pre_tokenizer"), normalization, source);
        checkAddedTokensMatchRawText(json.get("added_tokens"), preTokenizer, source);
        Template template = template(json.get("post_processor"), config, tokens, source);
        OptionalInt bos = tokenId(config.get("bos_token"), tokens);
        if (bos.isEmpty() && generation.get("bos_token_id") instanceof Long id) {
            bos = OptionalInt.of((int) (long) id);
        }
        return new BpeTokenizer(source, tokens, merges, Boolean.TRUE.equals(model.get("ignore_merges")), added, preTokenizer,
                template.prefix(), template.suffix(), bos, eos(config, generation, tokens, source));
    }

    /** A merge written as {@code "a b"} (tokenizers before 0.20) or as {@code ["a", "b"]}. */
    static String[] mergePair(Object merge, String source)
    {
        if (merge instanceof String s) {
            int space = s.indexOf(' ');
            if (space > 0 && space < s.length() - 1 && s.indexOf(' ', space + 1) < 0) {
                return new String[] {s.substring(0, space), s.substring(space + 1)};
            }
        }
        else if (merge instanceof List<?> pair && pair.size() == 2 && pair.get(0) instanceof String a && pair.get(1) instanceof String b) {
            return new String[] {a, b};
        }
        throw new IllegalArgumentException(source + ": merge " + merge + " is neither \"a b\" nor [\"a\", \"b\"]");
    }

    private static List<AddedToken> addedTokens(Object value, String source)
    {
        List<AddedToken> added = new ArrayList<>();
        for (Object item : list(value == null ? List.of() : value, source, "added_tokens")) {
            Map<String, Object> token = object(item, source, "added_tokens[]");
            if (!(token.get("content") instanceof String content) || content.isEmpty()) {
                throw new IllegalArgumentException(source + ": added token " + token + " has no content");
            }
            added.add(new AddedToken(id(token.get("id"), source, "added token \"" + content + "\""), content,
                    Boolean.TRUE.equals(token.get("special"))));
        }
        return added;
    }

    /** Unicode normalization forms, in order: null, NFC/NFD/NFKC/NFKD, or a Sequence of them (maybe empty). */
    private static List<Normalizer.Form> normalizer(Object value, String source)
    {
        if (value == null) {
            return List.of();
        }
        Map<String, Object> normalizer = object(value, source, "normalizer");
        List<Object> steps = type(normalizer).equals("Sequence") ? list(normalizer.get("normalizers"), source, "normalizer.normalizers")
                : List.of(normalizer);
        List<Normalizer.Form> forms = new ArrayList<>();
        for (Object step : steps) {
            String type = type(object(step, source, "normalizer step"));
            switch (type) {
                case "NFC", "NFD", "NFKC", "NFKD" -> forms.add(Normalizer.Form.valueOf(type));
                default -> throw new IllegalArgumentException(source + ": normalizer " + type
                        + " is not supported; supported: none (null), NFC, NFD, NFKC, NFKD, or a Sequence of them");
            }
        }
        return forms;
    }

    /**
     * Added tokens are cut out of the raw text and only the rest is normalized; that equals matching a
     * {@code normalized} token in normalized text only while normalizing leaves its content as it is. The
     * lstrip, rstrip and single_word options are not implemented, so files that set them are refused.
     */
    private static void checkAddedTokensMatchRawText(Object value, PreTokenizer preTokenizer, String source)
    {
        for (Object item : list(value == null ? List.of() : value, source, "added_tokens")) {
            Map<String, Object> token = object(item, source, "added_tokens[]");
            for (String option : List.of("lstrip", "rstrip", "single_word")) {
                if (Boolean.TRUE.equals(token.get(option))) {
                    throw new IllegalArgumentException(source + ": added token " + token.get("content") + " sets " + option
                            + ", which is not supported; supported: added tokens with lstrip, rstrip and single_word false");
                }
            }
            String content = String.valueOf(token.get("content"));
            if (Boolean.TRUE.equals(token.get("normalized")) && !preTokenizer.normalize(content).equals(content)) {
                throw new IllegalArgumentException(source + ": added token " + content + " is normalized and the normalizer changes it, "
                        + "which is not supported; supported: normalized added tokens the normalizer leaves unchanged");
            }
        }
    }

    private static PreTokenizer preTokenizer(Object value, List<Normalizer.Form> normalization, String source)
    {
        String supported = "; supported: ByteLevel, or Sequence of Split (behavior Isolated, not inverted) and ByteLevel";
        if (value == null) {
            throw new IllegalArgumentException(source + ": there is no pre_tokenizer; a byte-level BPE tokenizer needs ByteLevel" + supported);
        }
        Map<String, Object> pre = object(value, source, "pre_tokenizer");
        List<Object> steps = type(pre).equals("Sequence") ? list(pre.get("pretokenizers"), source, "pre_tokenizer.pretokenizers") : List.of(pre);
        List<Pattern> splits = new ArrayList<>();
        boolean byteLevel = false;
        boolean prefixSpace = false;
        for (Object item : steps) {
            Map<String, Object> step = object(item, source, "pre_tokenizer step");
            switch (type(step)) {
                case "Split" -> {
                    if (!"Isolated".equals(step.get("behavior")) || Boolean.TRUE.equals(step.get("invert"))) {
                        throw new IllegalArgumentException(source + ": Split with behavior " + step.get("behavior") + " and invert "
                                + step.get("invert") + " is not supported" + supported);
                    }
                    Map<String, Object> pattern = object(step.get("pattern"), source, "Split.pattern");
                    splits.add(pattern.get("Regex") instanceof String regex ? PreTokenizer.compile(regex)
                            : PreTokenizer.compile(Pattern.quote(String.valueOf(pattern.get("String")))));
                }
                case "ByteLevel" -> {
                    byteLevel = true;
                    prefixSpace |= Boolean.TRUE.equals(step.get("add_prefix_space"));
                    if (!Boolean.FALSE.equals(step.get("use_regex"))) {
                        splits.add(PreTokenizer.compile(PreTokenizer.GPT2));
                    }
                }
                default -> throw new IllegalArgumentException(source + ": pre-tokenizer " + type(step) + " is not supported" + supported);
            }
        }
        if (!byteLevel) {
            throw new IllegalArgumentException(source + ": the pre_tokenizer has no ByteLevel step; only byte-level BPE is supported" + supported);
        }
        return new PreTokenizer(normalization, splits, prefixSpace);
    }

    private record Template(int[] prefix, int[] suffix) {}

    /** TemplateProcessing's single-sequence template (maybe inside a Sequence), else tokenizer_config's add_bos_token/add_eos_token. */
    private static Template template(Object value, Map<String, Object> config, String[] tokens, String source)
    {
        Map<String, Object> processor = value == null ? Map.of() : object(value, source, "post_processor");
        List<Object> processors = type(processor).equals("Sequence") ? list(processor.get("processors"), source, "post_processor.processors")
                : processor.isEmpty() ? List.of() : List.of(processor);
        for (Object item : processors) {
            Map<String, Object> step = object(item, source, "post_processor step");
            switch (type(step)) {
                case "TemplateProcessing" -> {
                    return templateProcessing(step, source);
                }
                case "ByteLevel" -> {}
                default -> throw new IllegalArgumentException(source + ": post_processor " + type(step)
                        + " is not supported; supported: TemplateProcessing, ByteLevel, Sequence of them");
            }
        }
        return new Template(Boolean.TRUE.equals(config.get("add_bos_token")) ? required(config, "bos_token", tokens, source) : new int[0],
                Boolean.TRUE.equals(config.get("add_eos_token")) ? required(config, "eos_token", tokens, source) : new int[0]);
    }

    private static Template templateProcessing(Map<String, Object> step, String source)
    {
        Map<String, Object> specials = object(step.getOrDefault("special_tokens", Map.of()), source, "TemplateProcessing.special_tokens");
        List<Integer> prefix = new ArrayList<>();
        List<Integer> suffix = new ArrayList<>();
        boolean afterSequence = false;
        for (Object item : list(step.get("single"), source, "TemplateProcessing.single")) {
            Map<String, Object> piece = object(item, source, "TemplateProcessing.single[]");
            if (piece.containsKey("Sequence")) {
                afterSequence = true;
                continue;
            }
            Object name = object(piece.get("SpecialToken"), source, "TemplateProcessing SpecialToken").get("id");
            Map<String, Object> special = object(specials.get(name), source, "TemplateProcessing.special_tokens \"" + name + "\"");
            for (Object id : list(special.get("ids"), source, "special token " + name + " ids")) {
                (afterSequence ? suffix : prefix).add(id(id, source, "special token " + name));
            }
        }
        return new Template(prefix.stream().mapToInt(Integer::intValue).toArray(), suffix.stream().mapToInt(Integer::intValue).toArray());
    }

    private static int[] required(Map<String, Object> config, String key, String[] tokens, String source)
    {
        OptionalInt id = tokenId(config.get(key), tokens);
        if (id.isEmpty()) {
            throw new IllegalArgumentException(source + ": tokenizer_config.json asks to add " + key + " but " + key + " "
                    + config.get(key) + " is not a token of the vocabulary");
        }
        return new int[] {id.getAsInt()};
    }

    private static Set<Integer> eos(Map<String, Object> config, Map<String, Object> generation, String[] tokens, String source)
    {
        Object ids = generation.get("eos_token_id");
        Set<Integer> eos = new LinkedHashSet<>();
        if (ids instanceof Long id) {
            eos.add(id(id, source, "generation_config.json eos_token_id"));
        }
        else if (ids instanceof List<?> list) {
            list.forEach(id -> eos.add(id(id, source, "generation_config.json eos_token_id")));
        }
        else {
            tokenId(config.get("eos_token"), tokens).ifPresent(eos::add);
        }
        for (int id : eos) {
            if (id >= tokens.length) {
                throw new IllegalArgumentException(source + ": EOS id " + id + " is outside the vocabulary 0.." + (tokens.length - 1));
            }
        }
        return eos;
    }

    /** A token named as a string or as {@code {"content": …}} (an AddedToken), looked up in the vocabulary. */
    private static OptionalInt tokenId(Object value, String[] tokens)
    {
        Object content = value instanceof Map<?, ?> map ? map.get("content") : value;
        if (content instanceof String name) {
            for (int id = tokens.length - 1; id >= 0; id--) {
                if (name.equals(tokens[id])) {
                    return OptionalInt.of(id);
                }
            }
        }
        return OptionalInt.empty();
    }

    private static String type(Object value)
    {
        return value instanceof Map<?, ?> map ? String.valueOf(map.get("type")) : String.valueOf(value);
    }

    private static int id(Object value, String source, String what)
    {
        if (!(value instanceof Long n) || n < 0 || n > Integer.MAX_VALUE - 1) {
            throw new IllegalArgumentException(source + ": " + what + " must have a non-negative integer id, was " + value);
        }
        return (int) (long) n;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String source, String what)
    {
        if (!(value instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": " + what + " must be an object, was " + value);
        }
        return (Map<String, Object>) map;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object value, String source, String what)
    {
        if (!(value instanceof List<?> list)) {
            throw new IllegalArgumentException(source + ": " + what + " must be an array, was " + value);
        }
        return (List<Object>) list;
    }
}
