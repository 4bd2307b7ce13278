package io.handoff.core.output;

import io.handoff.core.scheduler.LogprobRequest;

/**
 * The log probabilities one generation returns, as the APIs ask for them: every output token's, with the {@code topN}
 * most likely alternatives at each position, and the prompt's from position {@code promptFrom} on (-1: none).
 *
 * <p>The first prompt position reported has no log probability (SGLang pads it with null at any start, and OpenAI's
 * echo starts at position 0, which nothing predicts), so the engine is asked from the position after it: a start
 * at the prompt's last token (SGLang's default) costs no prompt computation at all.
 *
 * @param tokenText whether SGLang's triples carry the token's text ({@code return_text_in_logprobs}); OpenAI's shapes
 *        always do
 */
public record LogprobOptions(int topN, int promptFrom, boolean tokenText)
{
    public LogprobOptions
    {
        if (topN < 0 || topN > LogprobRequest.MAX_TOP_N) {
            throw new IllegalArgumentException("topN must be in 0.." + LogprobRequest.MAX_TOP_N + ", was " + topN);
        }
        if (promptFrom < -1) {
            throw new IllegalArgumentException("promptFrom must be -1 (none) or a prompt position, was " + promptFrom);
        }
    }

    /** What the engine computes for a prompt of {@code promptLength} tokens. */
    public LogprobRequest request(int promptLength)
    {
        return new LogprobRequest(topN, promptFrom >= 0 && promptFrom + 1 < promptLength ? promptFrom + 1 : -1);
    }
}
