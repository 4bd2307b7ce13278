package io.handoff.core.grammar;

import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One request's place in its grammar: the tokens it may sample next, and the tokens it has output. It reads the
 * output tokens themselves ({@link #catchUp}), not a state handed over, so a decode that continues a request whose
 * first token a prefill sampled replays that token and is exactly where the prefill's matcher was: the constraint
 * crosses the handoff as the grammar and the tokens, both of which the decode already has.
 */
public final class TokenMatcher
{
    private final TokenGrammar grammar;
    private final Set<Integer> endIds;
    private ByteAutomaton.State state;
    private int consumed;
    private boolean ended;

    /** @param endIds the ids that end the request; allowed exactly where the grammar may end */
    public TokenMatcher(TokenGrammar grammar, Set<Integer> endIds)
    {
        this.grammar = requireNonNull(grammar, "grammar is null");
        this.endIds = Set.copyOf(requireNonNull(endIds, "endIds is null"));
        if (this.endIds.isEmpty()) {
            throw new GrammarException("a constrained request needs an end token: the model has no EOS id and the request sets no stop token ids");
        }
        this.state = grammar.start();
    }

    /** Reads output tokens {@code [read so far, count)}; throws {@link GrammarException} at a token the grammar refuses. */
    public void catchUp(int[] outputs, int count)
    {
        while (consumed < count) {
            accept(outputs[consumed]);
            consumed++;
        }
    }

    private void accept(int token)
    {
        if (ended) {
            return; // a step scheduled past the end samples once more; its token is dropped
        }
        if (endIds.contains(token)) {
            if (!state.complete()) {
                throw new GrammarException("output token " + consumed + " (id " + token + ") ends the output where the grammar cannot end");
            }
            ended = true;
            return;
        }
        ByteAutomaton.State next = grammar.advance(state, token);
        if (next == null) {
            throw new GrammarException("output token " + consumed + " (id " + token + ") is not allowed by the grammar there");
        }
        state = next;
    }

    /** Whether {@code token} is one of the ids that end the output. */
    public boolean ends(int token)
    {
        return endIds.contains(token);
    }

    /** Whether the output so far is a whole match (an end id may come next). */
    public boolean complete()
    {
        return ended || state.complete();
    }

    /**
     * The tokens that may come next, a bit per id (low bit first); null once an end id was read. Throws
     * {@link GrammarException} when no token can continue, which a grammar whose every byte some token spells never does.
     */
    public long[] allowed()
    {
        if (ended) {
            return null;
        }
        long[] mask = grammar.mask(state);
        if (state.complete()) {
            mask = mask.clone();
            for (int id : endIds) {
                if (id >= 0 && id < grammar.vocabulary().rows()) {
                    mask[id >>> 6] |= 1L << id;
                }
            }
            return mask;
        }
        for (long word : mask) {
            if (word != 0) {
                return mask;
            }
        }
        throw new GrammarException("no token of the vocabulary can continue the output here (the grammar needs text no token spells)");
    }
}
