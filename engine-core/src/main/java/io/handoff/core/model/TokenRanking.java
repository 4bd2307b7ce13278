package io.handoff.core.model;

import java.util.Arrays;

/**
 * Token ids ranked by descending weight, ties toward the lower id (a total order), read by position from the top.
 * The top positions come from a binary heap, so a caller that needs only a few (top-k, a small nucleus) pays
 * {@code O(vocab + m log vocab)}; past {@link #heapPositions} it sorts the weights themselves (primitive, cache
 * friendly), which is cheaper than popping most of a large vocabulary, and finds an id only when asked for one. Both
 * give exactly the positions a full sort of the ids would.
 */
final class TokenRanking
{
    private final double[] weights;
    private final int[] heap;
    private int heapSize;
    // ids taken from the heap, in rank order: positions [0, taken)
    private final int[] top;
    private int taken;
    // every weight, ascending, once a position past the heap's share is asked for
    private double[] sorted;

    /** @param weights one per token id; read, never written */
    TokenRanking(double[] weights)
    {
        this.weights = weights;
        this.heap = new int[weights.length];
        for (int i = 0; i < heap.length; i++) {
            heap[i] = i;
        }
        heapSize = heap.length;
        for (int i = heapSize / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
        this.top = new int[heapPositions(weights.length)];
    }

    /**
     * How many positions the heap serves before the ranking sorts instead: a pop costs about {@code log vocab} scattered
     * reads, a sort about {@code log vocab} sequential ones per token, so the heap wins for a small share only.
     */
    static int heapPositions(int vocab)
    {
        return Math.min(vocab, 64 + vocab / 32);
    }

    /** The weight at {@code position} (0: the largest). */
    double weight(int position)
    {
        if (position < taken) {
            return weights[top[position]];
        }
        if (position == taken && taken < top.length) {
            top[taken++] = pop();
            return weights[top[position]];
        }
        return sortedWeights()[weights.length - 1 - position];
    }

    /** The id at {@code position}. */
    int id(int position)
    {
        double weight = weight(position);
        if (position < taken) {
            return top[position];
        }
        // the id is the n-th lowest id among those of equal weight, n being how many of them rank before it
        int first = position;
        while (first > 0 && Double.compare(weight(first - 1), weight) == 0) {
            first--;
        }
        int before = position - first;
        for (int id = 0; id < weights.length; id++) {
            if (Double.compare(weights[id], weight) == 0 && before-- == 0) {
                return id;
            }
        }
        throw new IllegalStateException("no id at position " + position + " of weight " + weight);
    }

    private double[] sortedWeights()
    {
        if (sorted == null) {
            // Double.compare's order, the one the heap uses
            sorted = weights.clone();
            Arrays.sort(sorted);
        }
        return sorted;
    }

    private int pop()
    {
        int best = heap[0];
        heap[0] = heap[--heapSize];
        siftDown(0);
        return best;
    }

    // whether token a ranks before token b
    private boolean before(int a, int b)
    {
        int byWeight = Double.compare(weights[b], weights[a]);
        return byWeight != 0 ? byWeight < 0 : a < b;
    }

    private void siftDown(int from)
    {
        int item = heap[from];
        int i = from;
        while (2 * i + 1 < heapSize) {
            int child = 2 * i + 1;
            if (child + 1 < heapSize && before(heap[child + 1], heap[child])) {
                child++;
            }
            if (!before(heap[child], item)) {
                break;
            }
            heap[i] = heap[child];
            i = child;
        }
        heap[i] = item;
    }
}
