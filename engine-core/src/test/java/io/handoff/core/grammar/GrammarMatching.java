package io.handoff.core.grammar;

import java.nio.charset.StandardCharsets;

/** Whether a grammar takes a whole text, and whether it takes a prefix of one: for the grammar tests. */
final class GrammarMatching
{
    private GrammarMatching() {}

    static boolean matches(Grammar grammar, String text)
    {
        ByteAutomaton.State state = ByteAutomaton.compile(grammar).advance(ByteAutomaton.compile(grammar).start(), bytes(text));
        return state != null && state.complete();
    }

    static boolean matches(ByteAutomaton automaton, String text)
    {
        ByteAutomaton.State state = automaton.advance(automaton.start(), bytes(text));
        return state != null && state.complete();
    }

    static boolean prefix(ByteAutomaton automaton, String text)
    {
        return automaton.advance(automaton.start(), bytes(text)) != null;
    }

    static byte[] bytes(String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
