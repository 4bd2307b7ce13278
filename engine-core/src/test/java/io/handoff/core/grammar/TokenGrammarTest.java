package io.handoff.core.grammar;

import io.handoff.core.json.Json;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenGrammarTest
{
    private static final int END = 0;

    // A vocabulary with the overlaps a BPE one has: single bytes, shared prefixes, tokens that span JSON syntax, UTF-8 pieces.
    private static TokenVocabulary vocabulary(long seed, int size)
    {
        SplittableRandom random = new SplittableRandom(seed);
        String alphabet = "{}[]\":, \n\\abcyesno0123456789-.étrufalsenul";
        List<byte[]> tokens = new ArrayList<>();
        tokens.add(null); // id 0: the end token, special
        for (int b = 1; b < 256; b++) {
            tokens.add(new byte[] {(byte) b});
        }
        while (tokens.size() < size) {
            int length = 2 + random.nextInt(6);
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < length; i++) {
                text.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
            tokens.add(random.nextInt(10) == 0 ? java.util.Arrays.copyOf(bytes, bytes.length - 1) : bytes); // some end inside a character
        }
        return TokenVocabulary.of(tokens.toArray(byte[][]::new));
    }

    @Test
    void masksAreExactlyTheTokensTheAutomatonTakesAlongRandomGenerations()
    {
        Grammar grammar = JsonSchemaGrammar.compile(Json.parse("""
                {"type": "object", "properties": {"city": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"},
                 "n": {"type": "integer", "minimum": -5, "maximum": 300}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
                 "required": ["city", "ok", "n", "tags"], "additionalProperties": false}""", "test"), "test");
        TokenVocabulary vocabulary = vocabulary(7, 3000);
        TokenGrammar tokens = new TokenGrammar(grammar, vocabulary);
        ByteAutomaton reference = ByteAutomaton.compile(grammar);
        SplittableRandom random = new SplittableRandom(11);
        int checkedStates = 0;
        for (int run = 0; run < 20; run++) {
            TokenMatcher matcher = new TokenMatcher(tokens, Set.of(END));
            List<Integer> output = new ArrayList<>();
            ByteAutomaton.State state = reference.start();
            while (true) {
                long[] mask = matcher.allowed();
                assertThat(mask).isNotNull();
                List<Integer> allowed = new ArrayList<>();
                for (int id = 0; id < vocabulary.rows(); id++) {
                    boolean bit = (mask[id >>> 6] & (1L << id)) != 0;
                    byte[] bytes = vocabulary.bytes(id);
                    boolean expected = id == END ? state.complete() : bytes != null && reference.advance(state, bytes) != null;
                    assertThat(bit).as("token %d after %s", id, output).isEqualTo(expected);
                    if (bit) {
                        allowed.add(id);
                    }
                }
                checkedStates++;
                int token = allowed.get(random.nextInt(allowed.size()));
                output.add(token);
                matcher.catchUp(output.stream().mapToInt(Integer::intValue).toArray(), output.size());
                if (token == END) {
                    assertThat(matcher.allowed()).isNull();
                    break;
                }
                state = reference.advance(state, vocabulary.bytes(token));
            }
        }
        assertThat(checkedStates).isGreaterThan(100);
    }

    @Test
    void aMatcherThatReadsAnotherNodesTokensIsWhereThatNodesMatcherWas()
    {
        Grammar grammar = RegexGrammar.fullMatch("(yes|no), [0-9]{3}\\.");
        TokenVocabulary vocabulary = vocabulary(3, 1000);
        TokenGrammar tokens = new TokenGrammar(grammar, vocabulary);
        TokenMatcher prefill = new TokenMatcher(tokens, Set.of(END));
        long[] first = prefill.allowed();
        int token = java.util.stream.IntStream.range(0, vocabulary.rows()).filter(id -> (first[id >>> 6] & (1L << id)) != 0).max().orElseThrow();
        prefill.catchUp(new int[] {token}, 1);
        // the decode builds its own matcher from the same grammar and reads the prefill's first token
        TokenMatcher decode = new TokenMatcher(new TokenGrammar(grammar, vocabulary), Set.of(END));
        decode.catchUp(new int[] {token}, 1);
        assertThat(decode.allowed()).isEqualTo(prefill.allowed());
        TokenMatcher refused = new TokenMatcher(tokens, Set.of(END));
        int bad = "z".getBytes(StandardCharsets.UTF_8)[0] & 0xff;
        assertThatThrownBy(() -> refused.catchUp(new int[] {bad}, 1)).isInstanceOf(GrammarException.class).hasMessageContaining("not allowed");
        TokenMatcher early = new TokenMatcher(tokens, Set.of(END));
        assertThatThrownBy(() -> early.catchUp(new int[] {END}, 1)).hasMessageContaining("cannot end");
    }

    @Test
    void aSpecialTokenTheGrammarNamesIsAllowedWhereItIsAndNowhereElse()
    {
        int mark = 1;
        TokenVocabulary vocabulary = TokenVocabulary.of(new byte[][] {null, null, "a".getBytes(StandardCharsets.UTF_8),
                "b".getBytes(StandardCharsets.UTF_8), "ab".getBytes(StandardCharsets.UTF_8)});
        Grammar grammar = new Grammar("root", java.util.Map.of("root", GrammarExpr.seq(new GrammarExpr.Special(mark),
                new GrammarExpr.Repeat(GrammarExpr.literal("a"), 1, GrammarExpr.Repeat.UNBOUNDED))), "test");
        TokenMatcher matcher = new TokenMatcher(new TokenGrammar(grammar, vocabulary), Set.of(END));
        assertThat(matcher.allowed()[0]).isEqualTo(1L << mark);
        matcher.catchUp(new int[] {mark}, 1);
        assertThat(matcher.allowed()[0]).isEqualTo(1L << 2);
        matcher.catchUp(new int[] {mark, 2}, 2);
        assertThat(matcher.allowed()[0]).isEqualTo(1L << 2 | 1L << END);
        TokenMatcher again = new TokenMatcher(new TokenGrammar(grammar, vocabulary), Set.of(END));
        assertThatThrownBy(() -> again.catchUp(new int[] {mark, mark}, 2)).isInstanceOf(GrammarException.class);
    }
}
