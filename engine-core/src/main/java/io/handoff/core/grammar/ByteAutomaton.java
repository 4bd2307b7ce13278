package io.handoff.core.grammar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A {@link Grammar} as a pushdown automaton over bytes, determinized lazily: each rule is a Thompson NFA whose
 * positions are nodes; a parse is a stack of {@link Frame}s (the top is where the current rule is, the ones below are
 * where each caller resumes); a {@link State} is the set of stacks a prefix of bytes can be in, each at a node that
 * reads a byte, and whether the whole grammar may end there. {@link #next} computes a state's successor on a byte
 * once and remembers it, so walking a vocabulary's tokens from a state costs a table lookup per byte after the first
 * time. Special tokens a grammar names ({@link GrammarExpr.Special}) are symbols after the 256 bytes. Not thread-safe:
 * {@link TokenGrammar} serializes its use.
 *
 * <p>Left recursion is refused (it would push forever); stacks deeper than {@link #MAX_DEPTH} are not followed, so
 * a recursive grammar (nested JSON) generates at most that depth.
 */
public final class ByteAutomaton
{
    public static final int MAX_DEPTH = 64;
    static final int MAX_NODES = 400_000;
    // past these the interned states are dropped (states in use stay valid: they are compared by content)
    private static final int MAX_STATES = 10_000;

    private final int[] ruleStart;
    private final String[] ruleNames;
    // the special tokens the grammar names: symbol 256 + k is token specialIds[k]
    private final int[] specialIds;
    // per node: byte edges as (lo, hi, target) triples, epsilon targets, calls as (rule, return node) pairs
    private final int[][] edges;
    private final int[][] epsilons;
    private final int[][] calls;
    private final boolean[] finals;
    private final int[][] closures;
    private final State start;
    private final Map<Frame, Frame> frames = new HashMap<>();
    private final Map<Key, State> states = new HashMap<>();
    private int resets;

    private ByteAutomaton(Builder built, String[] ruleNames, int rootRule)
    {
        this.ruleStart = built.ruleStart;
        this.ruleNames = ruleNames;
        this.specialIds = built.specials.stream().mapToInt(Integer::intValue).toArray();
        int n = built.size;
        this.edges = new int[n][];
        this.epsilons = new int[n][];
        this.calls = new int[n][];
        this.finals = new boolean[n];
        for (int i = 0; i < n; i++) {
            edges[i] = built.edges.get(i).stream().mapToInt(Integer::intValue).toArray();
            epsilons[i] = built.epsilons.get(i).stream().mapToInt(Integer::intValue).toArray();
            calls[i] = built.calls.get(i).stream().mapToInt(Integer::intValue).toArray();
            finals[i] = built.finals.get(i);
        }
        this.closures = new int[n][];
        refuseLeftRecursion();
        this.start = closureState(List.of(frame(ruleStart[rootRule], null)));
    }

    public static ByteAutomaton compile(Grammar grammar)
    {
        String[] names = grammar.rules().keySet().toArray(String[]::new);
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < names.length; i++) {
            ids.put(names[i], i);
        }
        Builder builder = new Builder(names.length, ids);
        for (int i = 0; i < names.length; i++) {
            int from = builder.ruleStart[i];
            builder.finals.set(builder.build(grammar.rules().get(names[i]), from));
        }
        return new ByteAutomaton(builder, names, ids.get(grammar.root()));
    }

    public State start()
    {
        return start;
    }

    /** How many times the interned states were dropped (their masks go with them once no parse holds them). */
    int resets()
    {
        return resets;
    }

    /** The symbol of special token {@code id} (256 or more), or -1 when the grammar does not name it. */
    public int symbol(int id)
    {
        for (int k = 0; k < specialIds.length; k++) {
            if (specialIds[k] == id) {
                return 256 + k;
            }
        }
        return -1;
    }

    /** The special tokens the grammar names, by symbol: symbol {@code 256 + k} is token {@code specialTokens()[k]}. */
    int[] specialTokens()
    {
        return specialIds.clone();
    }

    /** The state after {@code state} reads {@code b} (a byte, or a special token's {@link #symbol}); null when no parse can read it. */
    public State next(State state, int b)
    {
        State known = state.next[b];
        if (known != null) {
            return known == State.DEAD ? null : known;
        }
        List<Frame> moved = new ArrayList<>();
        for (Frame frame : state.frames) {
            int[] e = edges[frame.node];
            for (int i = 0; i < e.length; i += 3) {
                if (b >= e[i] && b <= e[i + 1]) {
                    moved.add(frame(e[i + 2], frame.parent));
                }
            }
        }
        State result = moved.isEmpty() ? State.DEAD : closureState(moved);
        if (result.frames.length == 0 && !result.complete) {
            result = State.DEAD;
        }
        state.next[b] = result;
        return result == State.DEAD ? null : result;
    }

    /** The state after {@code bytes}, or null when they leave the grammar. */
    public State advance(State state, byte[] bytes)
    {
        State s = state;
        for (int i = 0; i < bytes.length && s != null; i++) {
            s = next(s, bytes[i] & 0xff);
        }
        return s;
    }

    private State closureState(List<Frame> seeds)
    {
        Set<Frame> visited = new HashSet<>();
        Set<Frame> live = new LinkedHashSet<>();
        boolean[] complete = {false};
        for (Frame seed : seeds) {
            if (visited.add(seed)) {
                close(seed, visited, live, complete);
            }
        }
        Key key = new Key(Set.copyOf(live), complete[0]);
        State known = states.get(key);
        if (known != null) {
            return known;
        }
        if (states.size() >= MAX_STATES) {
            states.clear();
            frames.clear();
            resets++;
        }
        State state = new State(live.toArray(Frame[]::new), complete[0], 256 + specialIds.length);
        states.put(key, state);
        return state;
    }

    private void close(Frame frame, Set<Frame> visited, Set<Frame> live, boolean[] complete)
    {
        for (int m : closure(frame.node)) {
            if (edges[m].length > 0) {
                live.add(frame(m, frame.parent));
            }
            int[] c = calls[m];
            for (int i = 0; i < c.length; i += 2) {
                Frame caller = frame(c[i + 1], frame.parent);
                if (caller.depth >= MAX_DEPTH) {
                    continue;
                }
                Frame callee = frame(ruleStart[c[i]], caller);
                if (visited.add(callee)) {
                    close(callee, visited, live, complete);
                }
            }
            if (finals[m]) {
                if (frame.parent == null) {
                    complete[0] = true;
                }
                else if (visited.add(frame.parent)) {
                    close(frame.parent, visited, live, complete);
                }
            }
        }
    }

    private int[] closure(int node)
    {
        int[] known = closures[node];
        if (known != null) {
            return known;
        }
        BitSet seen = new BitSet();
        int[] stack = new int[16];
        int top = 0;
        stack[top++] = node;
        seen.set(node);
        List<Integer> out = new ArrayList<>();
        while (top > 0) {
            int n = stack[--top];
            out.add(n);
            for (int t : epsilons[n]) {
                if (!seen.get(t)) {
                    seen.set(t);
                    if (top == stack.length) {
                        stack = Arrays.copyOf(stack, top * 2);
                    }
                    stack[top++] = t;
                }
            }
        }
        int[] result = out.stream().mapToInt(Integer::intValue).sorted().toArray();
        closures[node] = result;
        return result;
    }

    private Frame frame(int node, Frame parent)
    {
        Frame frame = new Frame(node, parent);
        Frame known = frames.putIfAbsent(frame, frame);
        return known == null ? frame : known;
    }

    // A rule that can call itself before reading a byte would push frames forever.
    private void refuseLeftRecursion()
    {
        int rules = ruleStart.length;
        boolean[] nullable = new boolean[rules];
        boolean changed = true;
        while (changed) {
            changed = false;
            for (int r = 0; r < rules; r++) {
                if (!nullable[r] && reachesEnd(ruleStart[r], nullable, null)) {
                    nullable[r] = true;
                    changed = true;
                }
            }
        }
        List<Set<Integer>> leftCalls = new ArrayList<>();
        for (int r = 0; r < rules; r++) {
            Set<Integer> called = new HashSet<>();
            reachesEnd(ruleStart[r], nullable, called);
            leftCalls.add(called);
        }
        for (int r = 0; r < rules; r++) {
            Set<Integer> seen = new HashSet<>();
            List<Integer> pending = new ArrayList<>(leftCalls.get(r));
            while (!pending.isEmpty()) {
                int s = pending.removeLast();
                if (s == r) {
                    throw new GrammarException("rule '" + ruleNames[r] + "' is left-recursive (it can refer to itself before matching any "
                            + "text), which this grammar engine does not take; rewrite it with repetition, e.g. a ::= b (\",\" b)*");
                }
                if (seen.add(s)) {
                    pending.addAll(leftCalls.get(s));
                }
            }
        }
    }

    // Whether the rule's end is reachable from node without reading a byte; records the rules called on the way.
    private boolean reachesEnd(int node, boolean[] nullable, Set<Integer> called)
    {
        BitSet seen = new BitSet();
        List<Integer> pending = new ArrayList<>(List.of(node));
        boolean end = false;
        while (!pending.isEmpty()) {
            int n = pending.removeLast();
            if (seen.get(n)) {
                continue;
            }
            seen.set(n);
            end |= finals[n];
            for (int t : epsilons[n]) {
                pending.add(t);
            }
            int[] c = calls[n];
            for (int i = 0; i < c.length; i += 2) {
                if (called != null) {
                    called.add(c[i]);
                }
                if (nullable[c[i]]) {
                    pending.add(c[i + 1]);
                }
            }
        }
        return end;
    }

    /** Where one parse is: a node of a rule, and the frame its rule returns to (null at the root). */
    static final class Frame
    {
        final int node;
        final Frame parent;
        final int depth;
        private final int hash;

        Frame(int node, Frame parent)
        {
            this.node = node;
            this.parent = parent;
            this.depth = parent == null ? 0 : parent.depth + 1;
            this.hash = 31 * node + (parent == null ? 0 : parent.hash);
        }

        @Override
        public boolean equals(Object o)
        {
            if (this == o) {
                return true;
            }
            return o instanceof Frame other && hash == other.hash && node == other.node && java.util.Objects.equals(parent, other.parent);
        }

        @Override
        public int hashCode()
        {
            return hash;
        }
    }

    private record Key(Set<Frame> frames, boolean complete) {}

    /** The parses a prefix can be in; {@link #complete()}: the grammar may end here. */
    public static final class State
    {
        static final State DEAD = new State(new Frame[0], false, 0);

        final Frame[] frames;
        final boolean complete;
        final State[] next;
        // the vocabulary mask of this state, filled by TokenGrammar
        long[] mask;

        State(Frame[] frames, boolean complete, int symbols)
        {
            this.frames = frames;
            this.complete = complete;
            this.next = new State[symbols];
        }

        public boolean complete()
        {
            return complete;
        }

        /** Whether any byte can follow. */
        public boolean open()
        {
            return frames.length > 0;
        }
    }

    private static final class Builder
    {
        final Map<String, Integer> ruleIds;
        final int[] ruleStart;
        final List<List<Integer>> edges = new ArrayList<>();
        final List<List<Integer>> epsilons = new ArrayList<>();
        final List<List<Integer>> calls = new ArrayList<>();
        final BitSet finals = new BitSet();
        final List<Integer> specials = new ArrayList<>();
        int size;

        Builder(int rules, Map<String, Integer> ruleIds)
        {
            this.ruleIds = ruleIds;
            this.ruleStart = new int[rules];
            for (int i = 0; i < rules; i++) {
                ruleStart[i] = node();
            }
        }

        int node()
        {
            if (size >= MAX_NODES) {
                throw new GrammarException("the grammar is too large: over " + MAX_NODES + " automaton states (bounded repetitions such as "
                        + "maxLength, maxItems or {m,n} are unrolled; lower them)");
            }
            edges.add(new ArrayList<>(0));
            epsilons.add(new ArrayList<>(0));
            calls.add(new ArrayList<>(0));
            return size++;
        }

        int build(GrammarExpr expr, int from)
        {
            return switch (expr) {
                case GrammarExpr.ByteRange range -> {
                    int to = node();
                    edges.get(from).addAll(List.of(range.lo(), range.hi(), to));
                    yield to;
                }
                case GrammarExpr.Seq seq -> {
                    int at = from;
                    for (GrammarExpr item : seq.items()) {
                        at = build(item, at);
                    }
                    yield at;
                }
                case GrammarExpr.Alt alt -> {
                    int end = node();
                    for (GrammarExpr option : alt.options()) {
                        int start = node();
                        epsilons.get(from).add(start);
                        epsilons.get(build(option, start)).add(end);
                    }
                    yield end;
                }
                case GrammarExpr.Repeat repeat -> {
                    int at = from;
                    for (int i = 0; i < repeat.min(); i++) {
                        at = build(repeat.body(), at);
                    }
                    if (repeat.max() == GrammarExpr.Repeat.UNBOUNDED) {
                        int loop = node();
                        epsilons.get(at).add(loop);
                        int bodyStart = node();
                        epsilons.get(loop).add(bodyStart);
                        epsilons.get(build(repeat.body(), bodyStart)).add(loop);
                        yield loop;
                    }
                    int end = node();
                    epsilons.get(at).add(end);
                    for (int i = repeat.min(); i < repeat.max(); i++) {
                        at = build(repeat.body(), at);
                        epsilons.get(at).add(end);
                    }
                    yield end;
                }
                case GrammarExpr.Special special -> {
                    int k = specials.indexOf(special.id());
                    if (k < 0) {
                        k = specials.size();
                        specials.add(special.id());
                    }
                    int to = node();
                    edges.get(from).addAll(List.of(256 + k, 256 + k, to));
                    yield to;
                }
                case GrammarExpr.Ref ref -> {
                    int to = node();
                    calls.get(from).addAll(List.of(ruleIds.get(ref.name()), to));
                    yield to;
                }
            };
        }
    }
}
