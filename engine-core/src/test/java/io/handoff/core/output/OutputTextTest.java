package io.handoff.core.output;

import io.handoff.core.model.ByteTokenizer;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class OutputTextTest
{
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();

    @Provide
    Arbitrary<int[]> outputs()
    {
        // Bytes biased towards UTF-8 lead and continuation bytes, so partial and malformed sequences are common; plus specials.
        Arbitrary<Integer> token = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0x20, 0x7e)),
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0x80, 0xbf)),
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0xc0, 0xff)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(ByteTokenizer.BOS, ByteTokenizer.EOS, ByteTokenizer.PAD)));
        return token.array(int[].class).ofMaxSize(40);
    }

    @Property(tries = 500, seed = "4242")
    void streamedTextAddsUpToTheTokenizersDecodingOfTheWholeOutput(@ForAll("outputs") int[] ids)
    {
        OutputText text = new OutputText(List.of(), Set.of());
        StringBuilder streamed = new StringBuilder();
        for (int id : ids) {
            text.append(id);
            String stable = text.text().substring(0, text.stableLength());
            assertThat(stable).startsWith(streamed.toString());
            streamed.setLength(0);
            streamed.append(stable);
        }
        text.finish();

        assertThat(text.text()).isEqualTo(TOKENIZER.decode(ids));
        assertThat(text.text()).startsWith(streamed.toString());
        assertThat(text.tokens()).isEqualTo(ids.length);
    }

    @Property(tries = 300, seed = "1729")
    void textEndsBeforeTheFirstStopStringAndNoStreamedPieceShowsPartOfIt(@ForAll("outputs") int[] ids)
    {
        String full = TOKENIZER.decode(ids);
        // A stop string taken from the output itself, so that it usually matches.
        String stop = full.length() < 4 ? "xyz" : full.substring(full.length() / 2, full.length() / 2 + 2);
        OutputText text = new OutputText(List.of(stop), Set.of());
        String shown = "";
        int consumed = 0;
        for (int id : ids) {
            consumed++;
            boolean ended = text.append(id);
            String stable = text.text().substring(0, text.stableLength());
            assertThat(stable).startsWith(shown).doesNotContain(stop);
            shown = stable;
            if (ended) {
                break;
            }
        }
        text.finish();

        int first = full.indexOf(stop);
        if (first >= 0 && text.match().isPresent()) {
            assertThat(text.text()).isEqualTo(full.substring(0, first));
            assertThat(text.match()).contains(new OutputText.StopString(stop));
            assertThat(text.tokens()).isEqualTo(consumed);
        }
        else {
            assertThat(text.text()).isEqualTo(full).doesNotContain(stop);
        }
    }

    @Test
    void stopStringSpanningTokensTrimsTheTextAndCountsTheTokenThatCompletedIt()
    {
        OutputText text = new OutputText(List.of("END"), Set.of());
        int[] ids = TOKENIZER.encode("abcENDxyz");

        int tokens = 0;
        boolean ended = false;
        while (!ended) {
            ended = text.append(ids[tokens++]);
            if (tokens == 5) {
                assertThat(text.text().substring(0, text.stableLength())).as("'EN' may start END: held back").isEqualTo("abc");
            }
        }

        assertThat(tokens).isEqualTo(6);
        assertThat(text.text()).isEqualTo("abc");
        assertThat(text.tokens()).isEqualTo(6);
        assertThat(text.match()).contains(new OutputText.StopString("END"));
        assertThat(text.append('x')).as("tokens after the stop are not output").isFalse();
        assertThat(text.tokens()).isEqualTo(6);
    }

    @Test
    void heldBackTailThatDoesNotBecomeAStopIsReleasedAtTheEnd()
    {
        OutputText text = new OutputText(List.of("STOP"), Set.of());
        for (int id : TOKENIZER.encode("go ST")) {
            text.append(id);
        }
        assertThat(text.text().substring(0, text.stableLength())).isEqualTo("go ");

        text.finish();

        assertThat(text.text().substring(0, text.stableLength())).isEqualTo("go ST");
        assertThat(text.match()).isEmpty();
    }

    @Test
    void stopTokenIdEndsTheOutputWithoutEnteringTheText()
    {
        OutputText text = new OutputText(List.of(), Set.of((int) '\n'));

        assertThat(text.append('o')).isFalse();
        assertThat(text.append('k')).isFalse();
        assertThat(text.append('\n')).isTrue();

        assertThat(text.text()).isEqualTo("ok");
        assertThat(text.tokens()).isEqualTo(3);
        assertThat(text.match()).contains(new OutputText.StopToken('\n'));
    }

    @Test
    void unfinishedCharacterBeforeAStopTokenBecomesAReplacementCharacterAsInTheTokenizer()
    {
        OutputText text = new OutputText(List.of(), Set.of(ByteTokenizer.EOS));
        int[] ids = {'o', 'k', 0xe2, 0x82, ByteTokenizer.EOS};
        for (int id : ids) {
            text.append(id);
        }

        text.finish();

        assertThat(text.text()).isEqualTo(TOKENIZER.decode(ids)).isEqualTo("ok\uFFFD");
    }

    @Test
    void multiByteCharacterAppearsOnlyWhenComplete()
    {
        byte[] euro = "€".getBytes(StandardCharsets.UTF_8);
        OutputText text = new OutputText(List.of(), Set.of());

        text.append(euro[0] & 0xff);
        text.append(euro[1] & 0xff);
        assertThat(text.text()).isEmpty();
        text.append(euro[2] & 0xff);

        assertThat(text.text()).isEqualTo("€");
    }
}
