package io.handoff.core.model.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * Byte-level BPE as GPT-2, Llama 3 and Qwen use it: special and added tokens are cut out of the text
 * first (longest first), the rest is pre-tokenized into words, each word's UTF-8 bytes are spelt with
 * {@link ByteLevel}'s characters, and adjacent symbols are merged by rank until no merge applies.
 * {@link TokenizerJson} builds one from a Hugging Face {@code tokenizer.json}; {@link #of} from the
 * lists a GGUF file carries. Thread-safe; words are cached because prompts repeat them.
 */
public final class BpeTokenizer
        implements Tokenizer
{
    /** Llama 3's pre-tokenizer split, as its tokenizer.json and GGUF's {@code llama-bpe} mean it. */
    public static final String LLAMA3_SPLIT = PreTokenizer.LLAMA3;
    private static final int CACHE_LIMIT = 100_000;

    /** A token matched verbatim in the input before pre-tokenization; a special one has no output text. */
    public record AddedToken(int id, String content, boolean special)
    {
        public AddedToken
        {
            requireNonNull(content, "content is null");
            if (content.isEmpty()) {
                throw new IllegalArgumentException("added token " + id + " is empty");
            }
        }
    }

    private final String source;
    private final String[] tokens;
    private final Map<String, Integer> ids;
    private final Map<String, Integer> mergeRanks;
    private final boolean ignoreMerges;
    private final Map<Character, List<AddedToken>> addedByFirstChar = new HashMap<>();
    private final Map<Integer, AddedToken> addedById = new HashMap<>();
    private final PreTokenizer preTokenizer;
    private final int[] prefix;
    private final int[] suffix;
    private final OptionalInt bos;
    private final Set<Integer> eos;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    /**
     * @param tokens the string of each id; null where an id is unused
     * @param merges the merge pairs, best first
     * @param prefix ids a prompt starts with when special tokens are added (a BOS), and {@code suffix} those it ends with
     */
    BpeTokenizer(String source, String[] tokens, List<String[]> merges, boolean ignoreMerges, List<AddedToken> added,
            PreTokenizer preTokenizer, int[] prefix, int[] suffix, OptionalInt bos, Set<Integer> eos)
    {
        this.source = requireNonNull(source, "source is null");
        this.tokens = tokens.clone();
        this.ids = new HashMap<>(tokens.length * 2);
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null) {
                ids.putIfAbsent(tokens[id], id);
            }
        }
        this.mergeRanks = new HashMap<>(merges.size() * 2);
        for (String[] pair : merges) {
            mergeRanks.putIfAbsent(pair[0] + ' ' + pair[1], mergeRanks.size());
        }
        this.ignoreMerges = ignoreMerges;
        for (AddedToken token : added) {
            checkId(token.id(), "added token '" + token.content() + "'");
            addedById.put(token.id(), token);
            addedByFirstChar.computeIfAbsent(token.content().charAt(0), c -> new ArrayList<>()).add(token);
        }
        addedByFirstChar.values().forEach(list -> list.sort(Comparator.comparingInt((AddedToken t) -> t.content().length()).reversed()));
        this.preTokenizer = requireNonNull(preTokenizer, "preTokenizer is null");
        this.prefix = prefix.clone();
        this.suffix = suffix.clone();
        for (int id : this.prefix) {
            checkId(id, "a prompt's leading special token");
        }
        for (int id : this.suffix) {
            checkId(id, "a prompt's trailing special token");
        }
        this.bos = requireNonNull(bos, "bos is null");
        this.eos = Set.copyOf(eos);
    }

    /**
     * A tokenizer from a GGUF file's {@code tokenizer.ggml.*} arrays ({@code model} {@code gpt2}).
     *
     * @param tokenTypes per token: 3 (control) is a special token matched in the input, 4 (user defined) an added one
     *         with text; others are ordinary vocabulary
     * @param eos the end-of-sequence id, or -1 for none; {@code bos} likewise
     * @param pre {@code tokenizer.ggml.pre}: {@code llama-bpe} (Llama 3's split), {@code default}/{@code gpt2} (GPT-2's), {@code qwen2}
     *         or {@code deepseek-v3}
     */
    /** The GGUF pre-tokenizers ({@code tokenizer.ggml.pre}) read. */
    public static final List<String> SUPPORTED_PRE = List.of("llama-bpe", "default", "gpt2", "qwen2", "tekken", "gpt-4o", "smollm", "deepseek-v3");

    public static BpeTokenizer of(List<String> tokens, List<String> merges, List<Integer> tokenTypes, int bos, int eos,
            boolean addBos, String pre)
    {
        requireNonNull(tokens, "tokens is null");
        requireNonNull(merges, "merges is null");
        requireNonNull(tokenTypes, "tokenTypes is null");
        requireNonNull(pre, "pre is null");
        if (tokenTypes.size() != tokens.size()) {
            throw new IllegalArgumentException("GGUF tokenizer: " + tokens.size() + " tokens but " + tokenTypes.size() + " token types");
        }
        PreTokenizer preTokenizer = switch (pre) {
            case "llama-bpe", "llama3" -> PreTokenizer.of(PreTokenizer.LLAMA3);
            case "default", "gpt2" -> PreTokenizer.of(PreTokenizer.GPT2);
            case "qwen2" -> PreTokenizer.of(PreTokenizer.QWEN2);
            case "tekken" -> PreTokenizer.of(PreTokenizer.TEKKEN);
            case "gpt-4o" -> PreTokenizer.of(PreTokenizer.GPT4O);
            case "smollm" -> PreTokenizer.of(PreTokenizer.SMOLLM.toArray(String[]::new));
            case "deepseek-v3" -> PreTokenizer.of(PreTokenizer.DEEPSEEK3.toArray(String[]::new));
            default -> throw new IllegalArgumentException("GGUF tokenizer: pre-tokenizer '" + pre
                    + "' is not supported; supported: " + String.join(", ", SUPPORTED_PRE));
        };
        List<AddedToken> added = new ArrayList<>();
        for (int id = 0; id < tokens.size(); id++) {
            int type = tokenTypes.get(id);
            if ((type == 3 || type == 4) && !tokens.get(id).isEmpty()) {
                added.add(new AddedToken(id, tokens.get(id), type == 3));
            }
        }
        List<String[]> pairs = merges.stream().map(m -> TokenizerJson.mergePair(m, "GGUF tokenizer.ggml.merges")).toList();
        return new BpeTokenizer("GGUF tokenizer", tokens.toArray(String[]::new), pairs, pre.startsWith("llama"), added, preTokenizer,
                addBos && bos >= 0 ? new int[] {bos} : new int[0], new int[0],
                bos >= 0 ? OptionalInt.of(bos) : OptionalInt.empty(), eos >= 0 ? Set.of(eos) : Set.of());
    }

    @Override
    public int[] encode(String text, boolean addSpecialTokens)
    {
        requireNonNull(text, "text is null");
        IdList out = new IdList();
        if (addSpecialTokens) {
            out.addAll(prefix);
        }
        int plainStart = 0;
        int i = 0;
        while (i < text.length()) {
            AddedToken match = addedAt(text, i);
            if (match == null) {
                i++;
                continue;
            }
            encodePlain(text.substring(plainStart, i), out);
            out.add(match.id());
            i += match.content().length();
            plainStart = i;
        }
        encodePlain(text.substring(plainStart), out);
        if (addSpecialTokens) {
            out.addAll(suffix);
        }
        return out.toArray();
    }

    private AddedToken addedAt(String text, int at)
    {
        List<AddedToken> candidates = addedByFirstChar.get(text.charAt(at));
        if (candidates != null) {
            for (AddedToken token : candidates) {
                if (text.startsWith(token.content(), at)) {
                    return token;
                }
            }
        }
        return null;
    }

    private void encodePlain(String text, IdList out)
    {
        if (text.isEmpty()) {
            return;
        }
        for (String word : preTokenizer.split(text)) {
            out.addAll(word(ByteLevel.encode(word)));
        }
    }

    /** The ids of one pre-tokenized word, spelt in byte-level characters. */
    private int[] word(String word)
    {
        int[] cached = cache.get(word);
        if (cached != null) {
            return cached;
        }
        int[] result = merge(word);
        if (cache.size() < CACHE_LIMIT) {
            cache.put(word, result);
        }
        return result;
    }

    private int[] merge(String word)
    {
        if (ignoreMerges) {
            Integer whole = ids.get(word);
            if (whole != null) {
                return new int[] {whole};
            }
        }
        List<String> symbols = new ArrayList<>(word.length());
        for (int i = 0; i < word.length(); i++) {
            symbols.add(String.valueOf(word.charAt(i)));
        }
        while (symbols.size() > 1) {
            int bestRank = Integer.MAX_VALUE;
            for (int i = 0; i + 1 < symbols.size(); i++) {
                Integer rank = mergeRanks.get(symbols.get(i) + ' ' + symbols.get(i + 1));
                if (rank != null && rank < bestRank) {
                    bestRank = rank;
                }
            }
            if (bestRank == Integer.MAX_VALUE) {
                break;
            }
            List<String> merged = new ArrayList<>(symbols.size());
            for (int i = 0; i < symbols.size(); i++) {
                if (i + 1 < symbols.size()) {
                    Integer rank = mergeRanks.get(symbols.get(i) + ' ' + symbols.get(i + 1));
                    if (rank != null && rank == bestRank) {
                        merged.add(symbols.get(i) + symbols.get(i + 1));
                        i++;
                        continue;
                    }
                }
                merged.add(symbols.get(i));
            }
            symbols = merged;
        }
        int[] result = new int[symbols.size()];
        for (int i = 0; i < result.length; i++) {
            Integer id = ids.get(symbols.get(i));
            if (id == null) {
                throw new IllegalArgumentException(source + ": the vocabulary has no token for '" + symbols.get(i)
                        + "'; a byte-level BPE vocabulary must hold all 256 byte characters");
            }
            result[i] = id;
        }
        return result;
    }

    @Override
    public byte[] tokenBytes(int id)
    {
        checkId(id, "token");
        AddedToken added = addedById.get(id);
        if (added != null) {
            return added.special() ? new byte[0] : added.content().getBytes(StandardCharsets.UTF_8);
        }
        String token = tokens[id];
        if (token == null) {
            return new byte[0];
        }
        byte[] bytes = ByteLevel.decode(token);
        return bytes != null ? bytes : token.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String specialTokenText(int id)
    {
        checkId(id, "token");
        AddedToken added = addedById.get(id);
        return added != null && added.special() ? added.content() : "";
    }

    @Override
    public Set<Integer> eosTokenIds()
    {
        return eos;
    }

    @Override
    public OptionalInt bosTokenId()
    {
        return bos;
    }

    @Override
    public int vocabSize()
    {
        return tokens.length;
    }

    @Override
    public boolean isSpecial(int id)
    {
        AddedToken added = addedById.get(id);
        return added != null && added.special();
    }

    /** The id of a token string, when the vocabulary or the added tokens hold it. */
    public OptionalInt id(String token)
    {
        Integer id = ids.get(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    @Override
    public String toString()
    {
        return "BPE tokenizer from " + source + " (" + tokens.length + " ids, " + mergeRanks.size() + " merges)";
    }

    private void checkId(int id, String what)
    {
        if (id < 0 || id >= tokens.length) {
            throw new IllegalArgumentException(source + ": " + what + " id " + id + " is outside the vocabulary 0.." + (tokens.length - 1));
        }
    }
}
