package io.handoff.core.grammar;

import io.handoff.core.model.tokenizer.Tokenizer;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static java.util.Objects.requireNonNull;

/**
 * The grammars bound to one tokenizer's vocabulary, kept by their source so that requests with the same schema share
 * its automaton and the masks it has computed: the 16 used last, whose masks share a budget of
 * {@link TokenGrammar#MASK_BUDGET_BYTES}. The vocabulary is sorted once, at the first constrained request.
 */
public final class TokenGrammars
{
    private static final int KEPT = 16;
    private static final Map<Tokenizer, TokenGrammars> BY_TOKENIZER = new WeakHashMap<>();

    private final Tokenizer tokenizer;
    private final AtomicLong maskBytes = new AtomicLong();
    private TokenVocabulary vocabulary;
    private final Map<String, TokenGrammar> grammars = new LinkedHashMap<>(16, 0.75f, true)
    {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, TokenGrammar> eldest)
        {
            if (size() > KEPT) {
                eldest.getValue().release();
                return true;
            }
            return false;
        }
    };

    private TokenGrammars(Tokenizer tokenizer)
    {
        this.tokenizer = tokenizer;
    }

    /** The grammars of {@code tokenizer}'s vocabulary, one set per tokenizer in this process. */
    public static TokenGrammars of(Tokenizer tokenizer)
    {
        requireNonNull(tokenizer, "tokenizer is null");
        synchronized (BY_TOKENIZER) {
            return BY_TOKENIZER.computeIfAbsent(tokenizer, TokenGrammars::new);
        }
    }

    /** {@code grammar} over this vocabulary; throws {@link GrammarException} when it cannot be compiled. */
    public synchronized TokenGrammar bind(Grammar grammar)
    {
        TokenGrammar known = grammars.get(grammar.source());
        if (known != null && known.grammar().equals(grammar)) {
            return known;
        }
        if (vocabulary == null) {
            vocabulary = TokenVocabulary.of(tokenizer, tokenizer.vocabSize());
        }
        TokenGrammar bound = new TokenGrammar(grammar, vocabulary, maskBytes);
        grammars.put(grammar.source(), bound);
        return bound;
    }
}
