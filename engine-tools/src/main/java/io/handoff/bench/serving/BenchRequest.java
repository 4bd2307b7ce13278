package io.handoff.bench.serving;

import static java.util.Objects.requireNonNull;

/** One request of a dataset: its prompt as token ids and how many tokens it must produce (greedy, {@code ignore_eos}). */
public record BenchRequest(int index, int[] inputIds, int maxNewTokens)
{
    public BenchRequest
    {
        requireNonNull(inputIds, "inputIds is null");
        if (inputIds.length == 0 || maxNewTokens < 1) {
            throw new IllegalArgumentException("request " + index + ": a prompt of " + inputIds.length + " tokens and " + maxNewTokens
                    + " output tokens");
        }
    }
}
