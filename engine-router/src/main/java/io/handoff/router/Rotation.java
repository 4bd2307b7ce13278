package io.handoff.router;

import java.util.List;

/**
 * A cursor over a pool's servers that breaks ties in turn: of the tied servers, the first one at or after the
 * cursor (in the candidates' order), and the cursor moves past it. Thread-safe.
 */
final class Rotation
{
    private long cursor;

    /** The tied server after the cursor; {@code tied} is a non-empty subset of {@code candidates}. */
    synchronized Backend next(List<Backend> candidates, List<Backend> tied)
    {
        int size = candidates.size();
        int start = (int) (cursor % size);
        for (int k = 0; k < size; k++) {
            Backend candidate = candidates.get((start + k) % size);
            if (tied.contains(candidate)) {
                cursor = start + k + 1;
                return candidate;
            }
        }
        throw new IllegalArgumentException("no tied server is a candidate");
    }
}
