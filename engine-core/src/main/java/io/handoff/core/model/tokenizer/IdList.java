package io.handoff.core.model.tokenizer;

import java.util.Arrays;

/** A growable int array for a tokenizer's output: prompts run to thousands of ids. Not thread-safe. */
final class IdList
{
    private int[] ids = new int[64];
    private int size;

    void add(int id)
    {
        if (size == ids.length) {
            ids = Arrays.copyOf(ids, size * 2);
        }
        ids[size++] = id;
    }

    void addAll(int[] more)
    {
        for (int id : more) {
            add(id);
        }
    }

    int size()
    {
        return size;
    }

    int[] toArray()
    {
        return Arrays.copyOf(ids, size);
    }
}
