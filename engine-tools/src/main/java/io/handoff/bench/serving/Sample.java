package io.handoff.bench.serving;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * How one request went against one URL, as the client saw it.
 *
 * @param rid the request id sent (the servers' timelines keep it)
 * @param status the HTTP status; 0 when no response came (connection refused, reset, timed out)
 * @param ttftMillis time from sending to the first output token; NaN when none arrived
 * @param itlMillis the gaps between successive output tokens as they arrived
 * @param e2eMillis time from sending to the end of the stream
 * @param error why the request failed; empty when it completed
 */
public record Sample(int index, String rid, int inputTokens, int status, int[] outputIds, double ttftMillis, double[] itlMillis, double e2eMillis,
        Optional<String> error)
{
    public Sample
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(outputIds, "outputIds is null");
        requireNonNull(itlMillis, "itlMillis is null");
        requireNonNull(error, "error is null");
    }

    public boolean completed()
    {
        return error.isEmpty();
    }

    /** Time per output token after the first: (E2E − TTFT) / (tokens − 1); NaN with fewer than two tokens. */
    public double tpotMillis()
    {
        return outputIds.length < 2 ? Double.NaN : (e2eMillis - ttftMillis) / (outputIds.length - 1);
    }

    /** The longest gap between two tokens; 0 with fewer than two tokens. */
    public double maxItlMillis()
    {
        double max = 0;
        for (double gap : itlMillis) {
            max = Math.max(max, gap);
        }
        return max;
    }
}
