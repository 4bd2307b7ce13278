package io.handoff.core.output;

import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.SamplingParams;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code no_stop_trim}, {@code skip_special_tokens} and EOS do to an output's text. */
class OutputTextOptionsTest
{
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();

    private static OutputText text(List<String> stops, Set<Integer> stopIds, boolean ignoreEos, boolean noStopTrim, boolean skipSpecialTokens)
    {
        return new OutputText(new SamplingOptions(SamplingParams.GREEDY, stops, stopIds, ignoreEos, noStopTrim, skipSpecialTokens),
                TOKENIZER.eosTokenIds(), TOKENIZER);
    }

    private static OutputText fed(OutputText text, int... ids)
    {
        for (int id : ids) {
            text.append(id);
        }
        text.finish();
        return text;
    }

    private static int[] bytes(String text)
    {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = bytes[i] & 0xff;
        }
        return ids;
    }

    @Test
    void noStopTrimKeepsTheStopStringAndNothingAfterIt()
    {
        // "cd" completes inside the token stream "abcdef": the text ends at its end, and the tokens count up to its last byte
        OutputText trimmed = fed(text(List.of("cd"), Set.of(), false, false, true), bytes("abcdef"));
        OutputText kept = fed(text(List.of("cd"), Set.of(), false, true, true), bytes("abcdef"));

        assertThat(trimmed.text()).isEqualTo("ab");
        assertThat(kept.text()).isEqualTo("abcd");
        assertThat(kept.match()).contains(new OutputText.StopString("cd"));
        assertThat(kept.tokens()).isEqualTo(trimmed.tokens()).isEqualTo(4);
    }

    @Test
    void noStopTrimKeepsTheStopTokensText()
    {
        assertThat(fed(text(List.of(), Set.of((int) 'x'), false, false, true), bytes("abxy")).text()).isEqualTo("ab");
        OutputText kept = fed(text(List.of(), Set.of((int) 'x'), false, true, true), bytes("abxy"));
        assertThat(kept.text()).isEqualTo("abx");
        assertThat(kept.match()).contains(new OutputText.StopToken('x'));
    }

    @Test
    void specialTokensShowHowTheyAreWrittenOnlyWhenNotSkippedAndEosOnlyWhenNotTrimmed()
    {
        int[] ids = {ByteTokenizer.BOS, 'h', 'i', ByteTokenizer.PAD, ByteTokenizer.EOS};

        assertThat(fed(text(List.of(), Set.of(), false, false, true), ids).text()).isEqualTo("hi");
        assertThat(fed(text(List.of(), Set.of(), false, false, false), ids).text()).isEqualTo("<s>hi<pad>");
        assertThat(fed(text(List.of(), Set.of(), false, true, false), ids).text()).isEqualTo("<s>hi<pad></s>");
        assertThat(fed(text(List.of(), Set.of(), true, false, false), ids).text()).isEqualTo("<s>hi<pad></s>");
    }

    @Test
    void aStopStringWrittenBySpecialTokensIsFound()
    {
        OutputText text = fed(text(List.of("<pad>"), Set.of(), false, false, false), 'o', 'k', ByteTokenizer.PAD, 'z');

        assertThat(text.text()).isEqualTo("ok");
        assertThat(text.match()).contains(new OutputText.StopString("<pad>"));
    }
}
