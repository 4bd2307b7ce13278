package io.handoff.core.scheduler;

import io.handoff.core.model.ForwardBatch;

import java.util.Arrays;

/**
 * Which batch rows a step needs logits of: each request's last token (its next-token logits, as always), and, before an extend
 * chunk's last-token row, the chunk's other positions whose logits give a prompt token's log probability. With no such position
 * in the step the rows are the batch's {@link ForwardBatch#lastTokenRows}, and the step runs as it would without log
 * probabilities. Per-row logits do not depend on which other rows are asked for, so the last-token rows are the same bits
 * either way.
 */
record PromptLogitRows(int[] rows, boolean any)
{
    static PromptLogitRows of(StepPlan plan, ForwardBatch batch)
    {
        int[] last = batch.lastTokenRows();
        int extra = 0;
        for (StepPlan.Chunk chunk : plan.chunks()) {
            extra += chunk.to() - 1 - firstNeeded(chunk);
        }
        if (extra == 0) {
            return new PromptLogitRows(last, false);
        }
        int[] rows = new int[last.length + extra];
        int at = 0;
        int chunkStart = 0;
        for (int i = 0; i < plan.chunks().size(); i++) {
            StepPlan.Chunk chunk = plan.chunks().get(i);
            for (int position = firstNeeded(chunk); position < chunk.to() - 1; position++) {
                rows[at++] = chunkStart + position - chunk.from();
            }
            rows[at++] = last[i];
            chunkStart += chunk.to() - chunk.from();
        }
        System.arraycopy(last, plan.chunks().size(), rows, at, last.length - plan.chunks().size());
        return new PromptLogitRows(rows, true);
    }

    /**
     * The chunk's first position whose logits a prompt log probability needs; {@code to - 1} (its last-token row, there
     * anyway) when none before that is needed.
     */
    static int firstNeeded(StepPlan.Chunk chunk)
    {
        ScheduledRequest request = chunk.request();
        int first = Math.max(chunk.from(), request.inputFrom - 1);
        return request.needsPromptLogits(first) ? Math.min(first, chunk.to() - 1) : chunk.to() - 1;
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof PromptLogitRows other && any == other.any && Arrays.equals(rows, other.rows);
    }

    @Override
    public int hashCode()
    {
        return Arrays.hashCode(rows);
    }
}
