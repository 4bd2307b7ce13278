package io.handoff.core.model.activation;

/**
 * The activation arrays of a forward pass, kept per thread from one layer and one pass to the next: a 512-token prefill
 * writes tens of megabytes of them, which, allocated afresh, cost the zeroing and the page faults of a growing heap. An
 * array is handed out again only for the same slot and the same length (a pass of another shape gets new ones), and only
 * for uses that write every element before reading it.
 */
public final class ForwardArrays
{
    /** What an array holds; two slots are never the same array. */
    public enum Slot
    {
        HIDDEN, NORMED, DELTA, GATE, UP, MOE_OUT, QUERY, KEY, VALUE
    }

    private static final ThreadLocal<float[][]> ARRAYS = ThreadLocal.withInitial(() -> new float[Slot.values().length][]);

    private ForwardArrays() {}

    /** This thread's array for {@code slot} of exactly {@code length} floats, with whatever the last pass left in it. */
    public static float[] get(Slot slot, int length)
    {
        float[][] arrays = ARRAYS.get();
        float[] array = arrays[slot.ordinal()];
        if (array == null || array.length != length) {
            array = new float[length];
            arrays[slot.ordinal()] = array;
        }
        return array;
    }
}
