package io.handoff.core.model.tokenizer;

import java.util.PriorityQueue;

/**
 * SentencePiece's BPE on one piece of text, as llama.cpp's SPM tokenizer runs it: the text starts as one symbol per
 * character, and the adjacent pair whose concatenation is the vocabulary's best-scored token is merged, the leftmost
 * of equal scores first, until no adjacent pair makes a token. A priority queue of candidate pairs keeps this
 * O(n log n): a merge adds at most two candidates, and candidates that a merge made stale are skipped when they come up.
 * One instance per text; not thread-safe.
 */
final class PieceMerge
{
    /** Merge candidate: symbols {@code left} and {@code right}, {@code length} chars together when it was queued. */
    private record Candidate(int left, int right, float score, int length) {}

    /** What the merge needs of a vocabulary: a token's id by its text (-1 when absent) and its score. */
    interface Vocabulary
    {
        int id(String piece);

        float score(int id);
    }

    private final String text;
    private final Vocabulary vocabulary;
    // symbol i covers text[start[i], start[i] + length[i]); a merged-away symbol has length 0
    private final int[] start;
    private final int[] length;
    private final int[] prev;
    private final int[] next;
    private final PriorityQueue<Candidate> queue = new PriorityQueue<>((a, b) -> a.score() != b.score()
            ? Float.compare(b.score(), a.score())
            : Integer.compare(a.left(), b.left()));

    private PieceMerge(String text, Vocabulary vocabulary)
    {
        this.text = text;
        this.vocabulary = vocabulary;
        int symbols = text.codePointCount(0, text.length());
        start = new int[symbols];
        length = new int[symbols];
        prev = new int[symbols];
        next = new int[symbols];
        for (int i = 0, at = 0; i < symbols; i++) {
            start[i] = at;
            length[i] = Character.charCount(text.codePointAt(at));
            at += length[i];
            prev[i] = i - 1;
            next[i] = i + 1 < symbols ? i + 1 : -1;
        }
    }

    /**
     * The pieces of {@code text} after merging, in order; each is a vocabulary token, or a single character the
     * vocabulary lacks (which the caller spells as byte tokens).
     */
    static String[] pieces(String text, Vocabulary vocabulary)
    {
        if (text.isEmpty()) {
            return new String[0];
        }
        return new PieceMerge(text, vocabulary).run();
    }

    private String[] run()
    {
        for (int i = 1; i < start.length; i++) {
            offer(i - 1, i);
        }
        while (!queue.isEmpty()) {
            Candidate c = queue.poll();
            // a side merged into another symbol since this pair was queued: its text is no longer these two symbols
            if (length[c.left()] == 0 || length[c.right()] == 0 || length[c.left()] + length[c.right()] != c.length()) {
                continue;
            }
            length[c.left()] += length[c.right()];
            length[c.right()] = 0;
            next[c.left()] = next[c.right()];
            if (next[c.left()] >= 0) {
                prev[next[c.left()]] = c.left();
            }
            offer(prev[c.left()], c.left());
            offer(c.left(), next[c.left()]);
        }
        int count = 0;
        for (int i = 0; i >= 0; i = next[i]) {
            count++;
        }
        String[] pieces = new String[count];
        int n = 0;
        for (int i = 0; i >= 0; i = next[i]) {
            pieces[n++] = text.substring(start[i], start[i] + length[i]);
        }
        return pieces;
    }

    private void offer(int left, int right)
    {
        if (left < 0 || right < 0) {
            return;
        }
        int end = start[left] + length[left] + length[right];
        int id = vocabulary.id(text.substring(start[left], end));
        if (id >= 0) {
            queue.add(new Candidate(left, right, vocabulary.score(id), end - start[left]));
        }
    }
}
