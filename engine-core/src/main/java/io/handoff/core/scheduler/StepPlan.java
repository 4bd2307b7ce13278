package io.handoff.core.scheduler;

import java.util.List;

/**
 * One forward step as the scheduler decided it: prompt chunks, then one decode token per decoding
 * request. Slots are resolved at scheduling time; decode input tokens are resolved on the compute
 * thread, because in overlap mode the previous step is still producing them.
 */
record StepPlan(long step, Fence fence, List<Chunk> chunks, List<Decode> decodes)
{
    /** Prompt positions {@code [from, to)} of a request; {@code slots} covers positions {@code 0 .. to-1}. */
    record Chunk(ScheduledRequest request, int from, int to, int[] slots, boolean last) {}

    /**
     * Output {@code index} of a request, sampled after feeding output {@code index-1} at {@code position}.
     * {@code pages} is the request's page list when scheduled, for the decode-metadata probe (empty when it is off).
     */
    record Decode(ScheduledRequest request, int index, int position, int[] slots, int[] pages) {}

    boolean isEmpty()
    {
        return chunks.isEmpty() && decodes.isEmpty();
    }

    int tokens()
    {
        return chunks.stream().mapToInt(c -> c.to() - c.from()).sum() + decodes.size();
    }
}
