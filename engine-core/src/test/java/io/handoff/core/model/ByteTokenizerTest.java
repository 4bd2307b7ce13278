package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ByteTokenizerTest
{
    private final ByteTokenizer tokenizer = new ByteTokenizer();

    @Test
    void roundTripsAsciiAndMultiByteText()
    {
        for (String text : new String[] {"", "hello, world", "héllo wörld — 日本語 🙂", "tab\tnew\nline"}) {
            assertThat(tokenizer.decode(tokenizer.encode(text))).isEqualTo(text);
            assertThat(tokenizer.decode(tokenizer.encode(text, true))).isEqualTo(text);
        }
    }

    @Test
    void tokensAreUtf8BytesAfterAnOptionalBos()
    {
        assertThat(tokenizer.encode("é", true)).containsExactly(ByteTokenizer.BOS, 0xc3, 0xa9);
        assertThat(tokenizer.encode("A")).containsExactly(65);
    }

    @Test
    void decodeSkipsSpecialsAndReplacesInvalidUtf8()
    {
        assertThat(tokenizer.decode(new int[] {ByteTokenizer.BOS, 'h', 'i', ByteTokenizer.EOS, ByteTokenizer.PAD})).isEqualTo("hi");
        assertThat(tokenizer.decode(new int[] {'a', 0xc3, 'b', 0xff})).isEqualTo("a\uFFFDb\uFFFD");
        assertThat(tokenizer.isSpecial(ByteTokenizer.EOS)).isTrue();
        assertThat(tokenizer.isSpecial(255)).isFalse();
    }

    @Test
    void decodeRejectsIdsOutsideTheVocabulary()
    {
        assertThatThrownBy(() -> tokenizer.decode(new int[] {259}))
                .hasMessage("token id 259 is outside the byte vocabulary 0..258");
    }
}
