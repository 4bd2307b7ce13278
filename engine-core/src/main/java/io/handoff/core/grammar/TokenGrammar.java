package io.handoff.core.grammar;

import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * A grammar bound to a model's vocabulary: which tokens each state allows, as a bit per token. A state's mask is
 * computed once, by walking the sorted vocabulary through the automaton (a common prefix is read once, a refused
 * prefix skips every token that starts with it), and kept with the state, so the steps of a generation that return to
 * a state (inside a string, between array items) pay a lookup. Shared by every request with the same grammar; its
 * methods are serialized on this object.
 */
public final class TokenGrammar
{
    /** The bytes of masks kept by the grammars of one vocabulary; past it a state's mask is computed each time it is needed. */
    static final long MASK_BUDGET_BYTES = 256L << 20;

    private final Grammar grammar;
    private final ByteAutomaton automaton;
    private final TokenVocabulary vocabulary;
    private final int words;
    // what the grammars sharing the budget keep, and what this one keeps of it
    private final AtomicLong budgetUsed;
    private long keptBytes;
    private int resetsSeen;

    /** A grammar with a mask budget of its own. */
    public TokenGrammar(Grammar grammar, TokenVocabulary vocabulary)
    {
        this(grammar, vocabulary, new AtomicLong());
    }

    /** A grammar whose masks count against {@code budgetUsed}, which the grammars of its vocabulary share. */
    TokenGrammar(Grammar grammar, TokenVocabulary vocabulary, AtomicLong budgetUsed)
    {
        this.budgetUsed = requireNonNull(budgetUsed, "budgetUsed is null");
        this.grammar = requireNonNull(grammar, "grammar is null");
        this.vocabulary = requireNonNull(vocabulary, "vocabulary is null");
        this.automaton = ByteAutomaton.compile(grammar);
        this.words = (vocabulary.rows() + 63) >>> 6;
    }

    public Grammar grammar()
    {
        return grammar;
    }

    public TokenVocabulary vocabulary()
    {
        return vocabulary;
    }

    synchronized ByteAutomaton.State start()
    {
        return automaton.start();
    }

    /** The state after token {@code id} from {@code state}; null when the grammar refuses it (or it has no text and is not named). */
    synchronized ByteAutomaton.State advance(ByteAutomaton.State state, int id)
    {
        byte[] bytes = vocabulary.bytes(id);
        if (bytes == null) {
            int symbol = automaton.symbol(id);
            return symbol < 0 ? null : automaton.next(state, symbol);
        }
        return automaton.advance(state, bytes);
    }

    /** The tokens allowed in {@code state}, end ids aside: one bit per token id, low bit first. Do not modify it. */
    synchronized long[] mask(ByteAutomaton.State state)
    {
        if (state.mask != null) {
            return state.mask;
        }
        long[] bits = walk(state);
        if (automaton.resets() != resetsSeen) {
            // the states that held the kept masks were dropped: their masks are garbage once no request holds them
            resetsSeen = automaton.resets();
            release();
        }
        long size = 8L * bits.length;
        if (budgetUsed.addAndGet(size) <= MASK_BUDGET_BYTES) {
            state.mask = bits;
            keptBytes += size;
        }
        else {
            budgetUsed.addAndGet(-size);
        }
        return bits;
    }

    /** Gives the budget back when the grammar is dropped from its cache (requests still using it keep what they have). */
    synchronized void release()
    {
        budgetUsed.addAndGet(-keptBytes);
        keptBytes = 0;
    }

    private long[] walk(ByteAutomaton.State from)
    {
        long[] bits = new long[words];
        if (!from.open()) {
            return bits;
        }
        ByteAutomaton.State[] states = new ByteAutomaton.State[vocabulary.maxLength() + 1];
        states[0] = from;
        int valid = 0;
        int count = vocabulary.count();
        for (int i = 0; i < count; i++) {
            int length = vocabulary.length(i);
            int offset = vocabulary.offset(i);
            int d = Math.min(vocabulary.lcp(i), valid);
            boolean dead = false;
            while (d < length) {
                ByteAutomaton.State next = automaton.next(states[d], vocabulary.at(offset + d) & 0xff);
                if (next == null) {
                    dead = true;
                    break;
                }
                states[++d] = next;
            }
            if (dead) {
                valid = d;
                // every following token that shares the refused prefix is refused too
                while (i + 1 < count && vocabulary.lcp(i + 1) > d) {
                    i++;
                }
                continue;
            }
            valid = length;
            int id = vocabulary.id(i);
            bits[id >>> 6] |= 1L << id;
        }
        int[] specials = automaton.specialTokens();
        for (int k = 0; k < specials.length; k++) {
            if (specials[k] < vocabulary.rows() && automaton.next(from, 256 + k) != null) {
                bits[specials[k] >>> 6] |= 1L << specials[k];
            }
        }
        return bits;
    }
}
