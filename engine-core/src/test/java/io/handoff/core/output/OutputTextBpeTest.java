package io.handoff.core.output;

import io.handoff.core.model.tokenizer.BpeTokenizer;
import io.handoff.core.model.tokenizer.ByteLevel;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Output text of a BPE model, whose tokens are several bytes, some a whole character and some part of one. */
class OutputTextBpeTest
{
    private static final int E_ACUTE = 256;
    private static final int END_OF_TURN = 257;
    private static final BpeTokenizer TOKENIZER = tokenizer();

    /** The 256 byte tokens, "é" as one token (the merge of its two bytes), and one control token. */
    private static BpeTokenizer tokenizer()
    {
        List<String> tokens = new ArrayList<>();
        List<Integer> types = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(String.valueOf(ByteLevel.charOf(b)));
            types.add(6);
        }
        tokens.add(ByteLevel.encode("é"));
        types.add(1);
        tokens.add("<|eot|>");
        types.add(3);
        return BpeTokenizer.of(tokens, List.of(ByteLevel.charOf(0xc3) + " " + ByteLevel.charOf(0xa9)), types, -1, END_OF_TURN, false, "gpt2");
    }

    @Test
    void aMultiByteTokenIsWholeTextAndACharacterCutAcrossTokensWaitsForItsLastByte()
    {
        int[] ids = TOKENIZER.encode("aé🚀", false);
        assertThat(ids).containsExactly('a', E_ACUTE, 0xf0, 0x9f, 0x9a, 0x80);
        OutputText text = new OutputText(List.of(), Set.of(END_OF_TURN), TOKENIZER);
        text.append('a');
        text.append(E_ACUTE);
        assertThat(text.text()).isEqualTo("aé");
        text.append(0xf0);
        text.append(0x9f);
        text.append(0x9a);
        assertThat(text.text()).as("three of the rocket's four bytes").isEqualTo("aé");
        text.append(0x80);
        assertThat(text.text()).isEqualTo("aé🚀");
        assertThat(text.append(END_OF_TURN)).as("the model's EOS is a stop token id").isTrue();
        text.finish();
        assertThat(text.text()).isEqualTo(TOKENIZER.decode(ids));
        assertThat(text.match()).contains(new OutputText.StopToken(END_OF_TURN));
    }

    @Test
    void aStopStringIsFoundAcrossMultiByteTokens()
    {
        OutputText text = new OutputText(List.of("é!"), Set.of(), TOKENIZER);
        for (int id : TOKENIZER.encode("café! more", false)) {
            text.append(id);
        }
        text.finish();
        assertThat(text.text()).isEqualTo("caf");
        assertThat(text.match()).contains(new OutputText.StopString("é!"));
    }
}
