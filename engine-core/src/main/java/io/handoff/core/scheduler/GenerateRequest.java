package io.handoff.core.scheduler;

import io.handoff.core.model.SamplingParams;

import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One generation request as the scheduler takes it: token ids in, token ids out.
 *
 * @param stopTokenIds ids that end the request (besides EOS unless {@code ignoreEos})
 * @param returnLogits keep each sampled position's logits in the result (tests and probes)
 */
public record GenerateRequest(
        String rid,
        int[] promptIds,
        int maxNewTokens,
        SamplingParams sampling,
        Set<Integer> stopTokenIds,
        boolean ignoreEos,
        boolean returnLogits)
{
    public GenerateRequest
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(sampling, "sampling is null");
        stopTokenIds = Set.copyOf(requireNonNull(stopTokenIds, "stopTokenIds is null"));
        if (promptIds.length == 0) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the prompt is empty");
        }
        if (maxNewTokens < 1) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "max_new_tokens must be at least 1, got " + maxNewTokens);
        }
    }

    public static GenerateRequest greedy(String rid, int[] promptIds, int maxNewTokens)
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, SamplingParams.GREEDY, Set.of(), false, false);
    }

    public GenerateRequest withLogits()
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, true);
    }
}
