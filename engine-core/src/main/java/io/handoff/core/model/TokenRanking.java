package io.handoff.core.model;

/**
 * Token ids in descending order of their weight, ties toward the lower id (a total order), handed out one at a time
 * from a binary heap: the same order a full sort gives, but a caller that stops after the first {@code m} (top-k, a
 * nucleus) pays {@code O(vocab + m log vocab)} instead of sorting the whole vocabulary.
 */
final class TokenRanking
{
    private final double[] weights;
    private final int[] heap;
    private int size;

    /** @param weights one per token id; read, never written */
    TokenRanking(double[] weights)
    {
        this.weights = weights;
        this.heap = new int[weights.length];
        for (int i = 0; i < heap.length; i++) {
            heap[i] = i;
        }
        size = heap.length;
        for (int i = size / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    boolean hasNext()
    {
        return size > 0;
    }

    /** The id {@link #next()} returns, without taking it. */
    int peek()
    {
        return heap[0];
    }

    int next()
    {
        int top = heap[0];
        heap[0] = heap[--size];
        siftDown(0);
        return top;
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
        while (2 * i + 1 < size) {
            int child = 2 * i + 1;
            if (child + 1 < size && before(heap[child + 1], heap[child])) {
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
