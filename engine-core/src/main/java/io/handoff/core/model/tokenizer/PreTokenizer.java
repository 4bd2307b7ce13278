package io.handoff.core.model.tokenizer;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * How text is cut into words before BPE: the text is first normalized (Unicode forms in turn, as a
 * tokenizer.json {@code normalizer} asks), then each pattern in turn splits every piece with the "Isolated"
 * behaviour (a match is a piece and so is the text between matches), after an optional leading space.
 * The patterns use {@link Pattern#UNICODE_CHARACTER_CLASS} so {@code \s} is Unicode white space as
 * in the Oniguruma patterns the files were written for; {@code \p{L}} and {@code \p{N}} are general
 * categories either way.
 */
record PreTokenizer(List<Normalizer.Form> normalization, List<Pattern> splits, boolean addPrefixSpace)
{
    /** GPT-2's split, also what {@code ByteLevel} with {@code use_regex: true} applies. */
    static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    /** Llama 3's split: contractions in any case, numbers in groups of up to three digits. */
    static final String LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
            + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /**
     * Qwen2's split (Qwen2, 2.5, 3; llama.cpp's {@code qwen2}): Llama 3's with single digits, and the contractions in ASCII
     * letters only, as llama.cpp writes them (no Unicode case folding).
     */
    static final String QWEN2 = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** The letters outside ASCII's lower (upper) case, as llama.cpp reads the case classes of Mistral's and GPT-4o's splits. */
    private static final String NOT_LOWER = "(?:(?=\\p{L})[^a-z])";
    private static final String NOT_UPPER = "(?:(?=\\p{L})[^A-Z])";
    private static final String CONTRACTION = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
    /** Mistral's Tekken split (Mistral Nemo and later; llama.cpp's {@code tekken}): words split at case changes, single digits. */
    static final String TEKKEN = "[^\\r\\n\\p{L}\\p{N}]?" + NOT_LOWER + "*" + NOT_UPPER + "+|[^\\r\\n\\p{L}\\p{N}]?" + NOT_LOWER + "+" + NOT_UPPER
            + "*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** GPT-4o's split ({@code gpt-4o}): Tekken's words with their contractions, digits in groups of up to three. */
    static final String GPT4O = "[^\\r\\n\\p{L}\\p{N}]?" + NOT_LOWER + "*" + NOT_UPPER + "+" + CONTRACTION + "?|[^\\r\\n\\p{L}\\p{N}]?" + NOT_LOWER
            + "+" + NOT_UPPER + "*" + CONTRACTION + "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** SmolLM's splits ({@code smollm}, as StarCoder's): every digit alone, then GPT-2's words. */
    static final List<String> SMOLLM = List.of("\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)");
    /**
     * DeepSeek V3's splits, applied in turn: digits in groups of up to three, runs of CJK ideographs and kana, then words,
     * punctuation and white space (its tokenizer.json's Sequence; llama.cpp's {@code deepseek-v3}).
     */
    static final List<String> DEEPSEEK3 = List.of("\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");

    PreTokenizer
    {
        normalization = List.copyOf(requireNonNull(normalization, "normalization is null"));
        splits = List.copyOf(requireNonNull(splits, "splits is null"));
    }

    static Pattern compile(String regex)
    {
        return Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS);
    }

    static PreTokenizer of(String... regexes)
    {
        return new PreTokenizer(List.of(), java.util.Arrays.stream(regexes).map(PreTokenizer::compile).toList(), false);
    }

    /** The text as the normalizer leaves it. */
    String normalize(String text)
    {
        for (Normalizer.Form form : normalization) {
            text = Normalizer.normalize(text, form);
        }
        return text;
    }

    List<String> split(String text)
    {
        text = normalize(text);
        List<String> pieces = new ArrayList<>();
        pieces.add(addPrefixSpace && !text.startsWith(" ") ? " " + text : text);
        for (Pattern pattern : splits) {
            List<String> next = new ArrayList<>();
            for (String piece : pieces) {
                isolate(pattern, piece, next);
            }
            pieces = next;
        }
        return pieces;
    }

    private static void isolate(Pattern pattern, String text, List<String> out)
    {
        Matcher m = pattern.matcher(text);
        int end = 0;
        while (m.find()) {
            if (m.start() == m.end()) {
                continue;
            }
            if (m.start() > end) {
                out.add(text.substring(end, m.start()));
            }
            out.add(m.group());
            end = m.end();
        }
        if (end < text.length()) {
            out.add(text.substring(end));
        }
    }
}
