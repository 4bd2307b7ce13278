package io.handoff.core.model.gguf;

import io.handoff.core.json.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * A real tokenizer's vocabulary in the form a GGUF file carries it ({@code tokenizer.ggml.*}), converted from a Hugging
 * Face {@code tokenizer.json} the way llama.cpp's converter does: {@link #byteLevel} for a byte-level BPE (Llama 3:
 * {@code gpt2} with merges) and {@link #sentencePiece} for a SentencePiece BPE with byte fallback (Llama 2: {@code llama}
 * with scores and token types).
 */
public record GgufVocabulary(String model, String pre, List<String> tokens, List<Float> scores, List<Integer> types,
                             List<String> merges, int bos, int eos, boolean addBos)
{
    private static final Pattern BYTE_TOKEN = Pattern.compile("<0x[0-9A-Fa-f]{2}>");

    /** How a SentencePiece vocabulary converted from {@code tokenizer.json} scores its pieces, which that file does not keep. */
    public enum Scores
    {
        /**
         * Minus the id: SentencePiece's BPE numbers pieces in the order training made them and scores each by minus
         * that order, so a better merge has the higher score.
         */
        MINUS_ID,
        /**
         * -1000 for every piece, as llama.cpp's converter writes a {@code tokenizer.json}-only Llama (LlamaHfVocab): every
         * merge ties and the leftmost pair goes first.
         */
        FLAT
    }

    public GgufVocabulary
    {
        requireNonNull(model, "model is null");
        requireNonNull(pre, "pre is null");
        tokens = List.copyOf(tokens);
        scores = List.copyOf(scores);
        types = List.copyOf(types);
        merges = List.copyOf(merges);
    }

    /**
     * Llama 3's form: every {@code model.vocab} piece normal (1), added tokens control (3) when special or shaped like a
     * control token ({@code <|...|>}, DeepSeek's {@code <｜...｜>}) and user-defined (4) otherwise, the merges as written; BOS and EOS by their names, a BOS added to prompts.
     */
    public static GgufVocabulary byteLevel(Path tokenizerDirectory, String pre, String bosName, String eosName)
            throws IOException
    {
        Map<String, Object> json = read(tokenizerDirectory);
        Map<String, Object> bpe = map(json.get("model"));
        Vocab vocab = vocab(json, bpe);
        List<String> merges = new ArrayList<>();
        for (Object merge : (List<?>) bpe.get("merges")) {
            merges.add(merge instanceof List<?> pair ? pair.get(0) + " " + pair.get(1) : (String) merge);
        }
        for (int id = 0; id < vocab.tokens.length; id++) {
            vocab.types[id] = vocab.special[id] || vocab.added[id] && looksSpecial(vocab.tokens[id]) ? 3 : vocab.added[id] ? 4 : 1;
        }
        return new GgufVocabulary("gpt2", pre, List.of(vocab.tokens), List.of(), boxed(vocab.types), merges, vocab.id(bosName),
                vocab.id(eosName), true);
    }

    /**
     * Llama 2's form: {@code <0xXX>} pieces byte (6), {@code <unk>} unknown (2), other special tokens control (3), the rest
     * normal (1), scored by {@code scores}; then {@code added} appended in order with their types (3 control or 4
     * user-defined), as a fine-tune's added tokens are. BOS {@code <s>}, EOS {@code </s>}, a BOS added to prompts.
     */
    public static GgufVocabulary sentencePiece(Path tokenizerDirectory, Scores scores, SequencedMap<String, Integer> added)
            throws IOException
    {
        Map<String, Object> json = read(tokenizerDirectory);
        Map<String, Object> bpe = map(json.get("model"));
        if (!"BPE".equals(bpe.get("type")) || !Boolean.TRUE.equals(bpe.get("byte_fallback"))) {
            throw new IllegalArgumentException(tokenizerDirectory + ": not a SentencePiece BPE with byte fallback (model " + bpe.get("type") + ")");
        }
        Vocab vocab = vocab(json, bpe);
        List<String> tokens = new ArrayList<>(List.of(vocab.tokens));
        List<Float> score = new ArrayList<>();
        List<Integer> types = new ArrayList<>();
        for (int id = 0; id < vocab.tokens.length; id++) {
            String piece = vocab.tokens[id];
            int type = BYTE_TOKEN.matcher(piece).matches() ? 6 : piece.equals("<unk>") ? 2 : vocab.special[id] ? 3 : 1;
            types.add(type);
            score.add(type != 1 ? 0f : scores == Scores.FLAT ? -1000f : (float) -id);
        }
        added.forEach((token, type) -> {
            tokens.add(token);
            types.add(type);
            score.add(scores == Scores.FLAT ? -1000f : 0f);
        });
        return new GgufVocabulary("llama", "default", tokens, score, types, List.of(), vocab.id("<s>"), vocab.id("</s>"), true);
    }

    /**
     * This vocabulary padded to {@code size} tokens as llama.cpp's converter pads a model's larger vocabulary: {@code [PADid]}
     * pieces of type unused (5).
     */
    public GgufVocabulary padded(int size)
    {
        if (size < tokens.size()) {
            throw new IllegalArgumentException("cannot pad " + tokens.size() + " tokens to " + size);
        }
        List<String> paddedTokens = new ArrayList<>(tokens);
        List<Integer> paddedTypes = new ArrayList<>(types);
        List<Float> paddedScores = new ArrayList<>(scores);
        for (int id = tokens.size(); id < size; id++) {
            paddedTokens.add("[PAD" + id + "]");
            paddedTypes.add(5);
            if (!scores.isEmpty()) {
                paddedScores.add(0f);
            }
        }
        return new GgufVocabulary(model, pre, paddedTokens, paddedScores, paddedTypes, merges, bos, eos, addBos);
    }

    /** The {@code tokenizer.ggml.*} keys of this vocabulary. */
    void writeTo(GgufWriter writer)
    {
        writer.put("tokenizer.ggml.model", GgufValueType.STRING, model)
                .put("tokenizer.ggml.pre", GgufValueType.STRING, pre)
                .put("tokenizer.ggml.tokens", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.STRING, tokens))
                .put("tokenizer.ggml.token_type", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.INT32, types))
                .put("tokenizer.ggml.bos_token_id", GgufValueType.UINT32, (long) bos)
                .put("tokenizer.ggml.eos_token_id", GgufValueType.UINT32, (long) eos)
                .put("tokenizer.ggml.add_bos_token", GgufValueType.BOOL, addBos);
        if (!scores.isEmpty()) {
            writer.put("tokenizer.ggml.scores", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.FLOAT32, scores));
        }
        if (!merges.isEmpty()) {
            writer.put("tokenizer.ggml.merges", GgufValueType.ARRAY, new GgufWriter.Array(GgufValueType.STRING, merges));
        }
    }

    /** The converter's test for an added token that is control whether or not tokenizer.json says special. */
    private static boolean looksSpecial(String token)
    {
        return token.startsWith("<|") && token.endsWith("|>") || token.startsWith("<\uff5c") && token.endsWith("\uff5c>");
    }

    /** The pieces by id, with which ids are added tokens and which of those are special. */
    private record Vocab(String[] tokens, boolean[] added, boolean[] special, int[] types)
    {
        int id(String token)
        {
            int id = Arrays.asList(tokens).indexOf(token);
            if (id < 0) {
                throw new IllegalArgumentException("the vocabulary has no '" + token + "'");
            }
            return id;
        }
    }

    private static Vocab vocab(Map<String, Object> json, Map<String, Object> bpe)
    {
        Map<String, Object> pieces = map(bpe.get("vocab"));
        List<Map<String, Object>> added = ((List<?>) json.get("added_tokens")).stream().map(GgufVocabulary::map).toList();
        int size = 0;
        for (Object id : pieces.values()) {
            size = Math.max(size, ((Long) id).intValue() + 1);
        }
        for (Map<String, Object> token : added) {
            size = Math.max(size, ((Long) token.get("id")).intValue() + 1);
        }
        Vocab vocab = new Vocab(new String[size], new boolean[size], new boolean[size], new int[size]);
        pieces.forEach((piece, id) -> vocab.tokens[((Long) id).intValue()] = piece);
        for (Map<String, Object> token : added) {
            int id = ((Long) token.get("id")).intValue();
            vocab.tokens[id] = (String) token.get("content");
            vocab.added[id] = true;
            vocab.special[id] = Boolean.TRUE.equals(token.get("special"));
        }
        for (int id = 0; id < size; id++) {
            if (vocab.tokens[id] == null) {
                // what llama.cpp's converter writes for an id the files leave unassigned
                vocab.tokens[id] = "[PAD" + id + "]";
                vocab.added[id] = true;
                vocab.special[id] = true;
            }
        }
        return vocab;
    }

    private static Map<String, Object> read(Path directory)
            throws IOException
    {
        Path file = directory.resolve("tokenizer.json");
        return map(Json.parse(Files.readString(file, StandardCharsets.UTF_8), file.toString()));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object json)
    {
        return (Map<String, Object>) json;
    }

    private static List<Integer> boxed(int[] values)
    {
        return Arrays.stream(values).boxed().toList();
    }
}
