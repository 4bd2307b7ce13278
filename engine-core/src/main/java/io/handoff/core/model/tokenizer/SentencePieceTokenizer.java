package io.handoff.core.model.tokenizer;

import io.handoff.core.model.tokenizer.SpecialTokenPartition.Fragment;
import io.handoff.core.model.tokenizer.SpecialTokenPartition.Special;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * SentencePiece BPE as llama.cpp runs a GGUF vocabulary of {@code tokenizer.ggml.model = llama} (Llama 2, TinyLlama,
 * Mistral): control, unknown and user-defined tokens written in the text are cut out first
 * ({@link SpecialTokenPartition}); each piece of text between them gets a leading space when the vocabulary adds a
 * space prefix and the piece starts the text or follows a special token; spaces become U+2581 ("▁"); and
 * {@link PieceMerge} merges characters by piece score. A character left that is not a token is spelt as its UTF-8
 * byte tokens ({@code <0xXX>}).
 *
 * <p>A piece's "▁" is a space in output text, including the first piece's: generated text continues a prompt, so
 * its leading space is real (llama.cpp's server streams it too). {@link #detokenize} is the text a whole encoded
 * string came from, without the space that encoding put in front. Thread-safe; short texts are cached.
 */
public final class SentencePieceTokenizer
        implements Tokenizer
{
    // ggml token types (tokenizer.ggml.token_type)
    static final int NORMAL = 1;
    static final int UNKNOWN = 2;
    static final int CONTROL = 3;
    static final int USER_DEFINED = 4;
    static final int BYTE = 6;

    private static final char SPACE = '\u2581';
    private static final int CACHE_LIMIT = 50_000;
    private static final int CACHED_LENGTH = 64;

    private final String[] pieces;
    private final float[] scores;
    private final int[] types;
    private final Map<String, Integer> ids;
    private final int[] byteTokens = new int[256];
    private final SpecialTokenPartition specials;
    private final OptionalInt bos;
    private final int eos;
    private final boolean addBos;
    private final boolean addEos;
    private final boolean addSpacePrefix;
    private final PieceMerge.Vocabulary vocabulary;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    private SentencePieceTokenizer(String[] pieces, float[] scores, int[] types, int bos, int eos, boolean addBos, boolean addEos,
            boolean addSpacePrefix)
    {
        this.pieces = pieces;
        this.scores = scores;
        this.types = types;
        this.ids = new HashMap<>(pieces.length * 2);
        List<Special> special = new ArrayList<>();
        for (int id = 0; id < pieces.length; id++) {
            if (pieces[id].isEmpty()) {
                continue;
            }
            Integer before = ids.putIfAbsent(pieces[id], id);
            if (before != null) {
                throw new IllegalArgumentException("GGUF tokenizer: tokens " + before + " and " + id + " are both '" + pieces[id]
                        + "'; llama.cpp refuses such a vocabulary too, convert the model again");
            }
            if (types[id] == CONTROL || types[id] == UNKNOWN || types[id] == USER_DEFINED) {
                special.add(new Special(id, pieces[id]));
            }
            if (types[id] == BYTE && byteValue(pieces[id]) < 0) {
                throw new IllegalArgumentException("GGUF tokenizer: token " + id + " '" + pieces[id] + "' has the byte type (6) but is "
                        + "not written <0xXX>; the file is corrupt");
            }
        }
        for (int b = 0; b < 256; b++) {
            // llama.cpp's byte_to_token: the <0xXX> token, else an ASCII byte's own one-character token
            Integer id = ids.get(String.format("<0x%02X>", b));
            if (id == null && b < 0x80) {
                id = ids.get(String.valueOf((char) b));
            }
            byteTokens[b] = id == null ? -1 : id;
        }
        this.specials = new SpecialTokenPartition(special);
        checkId(bos, "bos_token_id", true);
        checkId(eos, "eos_token_id", true);
        if (addBos && bos < 0) {
            throw new IllegalArgumentException("GGUF tokenizer: add_bos_token is true but bos_token_id is not set; set "
                    + "tokenizer.ggml.bos_token_id or add_bos_token false");
        }
        if (addEos && eos < 0) {
            throw new IllegalArgumentException("GGUF tokenizer: add_eos_token is true but eos_token_id is not set; set "
                    + "tokenizer.ggml.eos_token_id or add_eos_token false");
        }
        this.bos = bos >= 0 ? OptionalInt.of(bos) : OptionalInt.empty();
        this.eos = eos;
        this.addBos = addBos;
        this.addEos = addEos;
        this.addSpacePrefix = addSpacePrefix;
        this.vocabulary = new PieceMerge.Vocabulary()
        {
            @Override
            public int id(String piece)
            {
                Integer id = ids.get(piece);
                return id == null ? -1 : id;
            }

            @Override
            public float score(int id)
            {
                return SentencePieceTokenizer.this.scores[id];
            }
        };
    }

    /**
     * A tokenizer from a GGUF file's {@code tokenizer.ggml.*} arrays ({@code model} {@code llama}).
     *
     * @param scores per token; empty means every score is 0, as llama.cpp reads a file without them
     * @param tokenTypes per token (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte); empty means all normal
     * @param bos the beginning-of-sequence id, or -1 for none; {@code eos} likewise
     * @param addSpacePrefix {@code tokenizer.ggml.add_space_prefix}, true for Llama 2 and Mistral
     */
    public static SentencePieceTokenizer of(List<String> tokens, List<Float> scores, List<Integer> tokenTypes, int bos, int eos,
            boolean addBos, boolean addEos, boolean addSpacePrefix)
    {
        requireNonNull(tokens, "tokens is null");
        requireNonNull(scores, "scores is null");
        requireNonNull(tokenTypes, "tokenTypes is null");
        if (!scores.isEmpty() && scores.size() != tokens.size()) {
            throw new IllegalArgumentException("GGUF tokenizer: " + tokens.size() + " tokens but " + scores.size() + " scores");
        }
        if (!tokenTypes.isEmpty() && tokenTypes.size() != tokens.size()) {
            throw new IllegalArgumentException("GGUF tokenizer: " + tokens.size() + " tokens but " + tokenTypes.size() + " token types");
        }
        float[] score = new float[tokens.size()];
        int[] type = new int[tokens.size()];
        for (int i = 0; i < score.length; i++) {
            score[i] = scores.isEmpty() ? 0 : scores.get(i);
            type[i] = tokenTypes.isEmpty() ? NORMAL : tokenTypes.get(i);
        }
        return new SentencePieceTokenizer(tokens.toArray(String[]::new), score, type, bos, eos, addBos, addEos, addSpacePrefix);
    }

    @Override
    public int[] encode(String text, boolean addSpecialTokens)
    {
        requireNonNull(text, "text is null");
        IdList out = new IdList();
        if (addSpecialTokens && addBos) {
            out.add(bos.getAsInt());
        }
        boolean afterSpecial = true;
        for (Fragment fragment : specials.split(ByteLevel.withoutLoneSurrogates(text))) {
            switch (fragment) {
                case SpecialTokenPartition.Token(int id) -> {
                    out.add(id);
                    afterSpecial = true;
                }
                case SpecialTokenPartition.Text(String plain) -> {
                    out.addAll(piece(addSpacePrefix && afterSpecial ? " " + plain : plain));
                    afterSpecial = false;
                }
            }
        }
        if (addSpecialTokens && addEos) {
            out.add(eos);
        }
        return out.toArray();
    }

    private int[] piece(String text)
    {
        boolean cacheable = text.length() <= CACHED_LENGTH;
        int[] cached = cacheable ? cache.get(text) : null;
        if (cached != null) {
            return cached;
        }
        IdList out = new IdList();
        for (String piece : PieceMerge.pieces(text.replace(' ', SPACE), vocabulary)) {
            Integer id = ids.get(piece);
            if (id != null) {
                out.add(id);
                continue;
            }
            for (byte b : piece.getBytes(StandardCharsets.UTF_8)) {
                int token = byteTokens[b & 0xff];
                if (token < 0) {
                    throw new IllegalArgumentException("GGUF tokenizer: the vocabulary has neither '" + piece + "' nor its byte token "
                            + String.format("<0x%02X>", b & 0xff) + ", so it cannot spell that text; the model cannot read it");
                }
                out.add(token);
            }
        }
        int[] result = out.toArray();
        if (cacheable && cache.size() < CACHE_LIMIT) {
            cache.put(text, result);
        }
        return result;
    }

    @Override
    public byte[] tokenBytes(int id)
    {
        checkId(id, "token", false);
        return switch (types[id]) {
            case NORMAL -> pieces[id].replace(SPACE, ' ').getBytes(StandardCharsets.UTF_8);
            case USER_DEFINED -> pieces[id].getBytes(StandardCharsets.UTF_8);
            case BYTE -> new byte[] {(byte) byteValue(pieces[id])};
            // control and unknown tokens have no text; unused and undefined ones none either, as in llama.cpp
            default -> new byte[0];
        };
    }

    @Override
    public String specialTokenText(int id)
    {
        checkId(id, "token", false);
        return types[id] == CONTROL || types[id] == UNKNOWN ? pieces[id] : "";
    }

    /**
     * The text that {@link #encode} made {@code ids} from, as llama.cpp's {@code llama_detokenize} gives it: the
     * {@link #decode} of the ids less one leading space of the first token, which is the space encoding prefixed.
     */
    public String detokenize(int[] ids)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(ids.length * 4);
        for (int i = 0; i < ids.length; i++) {
            byte[] piece = tokenBytes(ids[i]);
            int skip = i == 0 && addSpacePrefix && piece.length > 0 && piece[0] == ' ' ? 1 : 0;
            bytes.write(piece, skip, piece.length - skip);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Override
    public Set<Integer> eosTokenIds()
    {
        return eos >= 0 ? Set.of(eos) : Set.of();
    }

    @Override
    public OptionalInt bosTokenId()
    {
        return bos;
    }

    @Override
    public int vocabSize()
    {
        return pieces.length;
    }

    @Override
    public boolean isSpecial(int id)
    {
        checkId(id, "token", false);
        return types[id] == CONTROL || types[id] == UNKNOWN;
    }

    /** The id of a token's text, when the vocabulary holds it. */
    public OptionalInt id(String token)
    {
        Integer id = ids.get(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    @Override
    public String toString()
    {
        return "SentencePiece tokenizer from GGUF tokenizer (" + pieces.length + " ids, space prefix " + addSpacePrefix + ")";
    }

    /** The byte a {@code <0xXX>} token stands for, or -1 when the text is not of that form. */
    private static int byteValue(String piece)
    {
        if (piece.length() != 6 || !piece.startsWith("<0x") || piece.charAt(5) != '>'
                || !HexFormat.isHexDigit(piece.charAt(3)) || !HexFormat.isHexDigit(piece.charAt(4))) {
            return -1;
        }
        return HexFormat.fromHexDigits(piece, 3, 5);
    }

    private void checkId(int id, String what, boolean optional)
    {
        if ((optional && id == -1) || (id >= 0 && id < pieces.length)) {
            return;
        }
        throw new IllegalArgumentException("GGUF tokenizer: " + what + " id " + id + " is outside the vocabulary 0.." + (pieces.length - 1));
    }
}
