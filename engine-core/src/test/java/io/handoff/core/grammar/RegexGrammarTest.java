package io.handoff.core.grammar;

import org.junit.jupiter.api.Test;

import static io.handoff.core.grammar.GrammarMatching.matches;
import static io.handoff.core.grammar.GrammarMatching.prefix;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RegexGrammarTest
{
    @Test
    void fullMatchTakesExactlyThePatternsStrings()
    {
        ByteAutomaton a = ByteAutomaton.compile(RegexGrammar.fullMatch("(yes|no), [0-9]{3}\\."));
        assertThat(matches(a, "yes, 123.")).isTrue();
        assertThat(matches(a, "no, 000.")).isTrue();
        assertThat(matches(a, "no, 00.")).isFalse();
        assertThat(matches(a, "maybe, 123.")).isFalse();
        assertThat(matches(a, "yes, 1234.")).isFalse();
        assertThat(prefix(a, "ye")).isTrue();
        assertThat(prefix(a, "yo")).isFalse();
    }

    @Test
    void classesEscapesAndQuantifiers()
    {
        ByteAutomaton a = ByteAutomaton.compile(RegexGrammar.fullMatch("^[^a-c\\d]+\\s?\\w*(?:x|é)?$"));
        assertThat(matches(a, "zz 9_ab")).isTrue();
        assertThat(matches(a, "a")).isFalse();
        assertThat(matches(a, "日本 x")).isTrue();
        assertThat(matches(a, "ñé")).isTrue();
        ByteAutomaton counted = ByteAutomaton.compile(RegexGrammar.fullMatch("a{2,3}b{2,}c?"));
        assertThat(matches(counted, "aabb")).isTrue();
        assertThat(matches(counted, "aaabbbbc")).isTrue();
        assertThat(matches(counted, "abb")).isFalse();
        assertThat(matches(counted, "aaaabb")).isFalse();
        ByteAutomaton dot = ByteAutomaton.compile(RegexGrammar.fullMatch("a.c"));
        assertThat(matches(dot, "a😀c")).isTrue();
        assertThat(matches(dot, "a\nc")).isFalse();
    }

    @Test
    void refusesWhatIsNotRegularWithTheOffset()
    {
        assertThatThrownBy(() -> RegexGrammar.fullMatch("(a)\\1")).isInstanceOf(GrammarException.class).hasMessageContaining("backreferences");
        assertThatThrownBy(() -> RegexGrammar.fullMatch("a(?=b)")).isInstanceOf(GrammarException.class).hasMessageContaining("lookaround");
        assertThatThrownBy(() -> RegexGrammar.fullMatch("\\bword")).isInstanceOf(GrammarException.class).hasMessageContaining("\\b");
        assertThatThrownBy(() -> RegexGrammar.fullMatch("[a-")).isInstanceOf(GrammarException.class).hasMessageContaining("offset");
        assertThatThrownBy(() -> RegexGrammar.fullMatch("a{5,2}")).isInstanceOf(GrammarException.class).hasMessageContaining("maximum below");
        assertThatThrownBy(() -> RegexGrammar.fullMatch("(".repeat(5000) + "a" + ")".repeat(5000))).hasMessageContaining("nest deeper than 100");
        assertThatThrownBy(() -> ByteAutomaton.compile(RegexGrammar.fullMatch("((a{1000}){1000}){1000}"))).hasMessageContaining("too large");
    }

    @Test
    void gbnfGrammarsMatchWhatTheyDescribe()
    {
        Grammar g = Gbnf.parse("""
                # a list of numbers
                root ::= "[" ws ( num ( "," ws num )* )? "]"
                num  ::= "-"? [1-9] [0-9]{0,3}
                ws   ::= [ \\t\\n]*
                """);
        ByteAutomaton a = ByteAutomaton.compile(g);
        assertThat(matches(a, "[1, -22,333]")).isTrue();
        assertThat(matches(a, "[]")).isTrue();
        assertThat(matches(a, "[01]")).isFalse();
        assertThat(matches(a, "[1,]")).isFalse();
        assertThatThrownBy(() -> ByteAutomaton.compile(Gbnf.parse("root ::= root \"a\" | \"b\"")))
                .isInstanceOf(GrammarException.class).hasMessageContaining("left-recursive");
        assertThatThrownBy(() -> Gbnf.parse("root ::= thing")).isInstanceOf(GrammarException.class).hasMessageContaining("'thing'");
        assertThatThrownBy(() -> Gbnf.parse("start ::= \"a\"")).isInstanceOf(GrammarException.class).hasMessageContaining("root");
    }

    @Test
    void recursiveGbnfNests()
    {
        ByteAutomaton a = ByteAutomaton.compile(Gbnf.parse("root ::= \"(\" root* \")\""));
        assertThat(matches(a, "(()(()))")).isTrue();
        assertThat(matches(a, "(()")).isFalse();
    }
}
