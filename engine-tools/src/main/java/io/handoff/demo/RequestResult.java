package io.handoff.demo;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * How one demo request ended, as the client saw it.
 *
 * @param outputIds the output tokens (what arrived, for a failed request)
 * @param ttftMillis time from sending the request to its first output token; NaN when none arrived
 * @param interTokenMillis the gaps between consecutive output tokens
 * @param error why the request failed; empty when it completed
 */
public record RequestResult(int index, int[] outputIds, double ttftMillis, double[] interTokenMillis, Optional<String> error)
{
    public RequestResult
    {
        requireNonNull(outputIds, "outputIds is null");
        requireNonNull(interTokenMillis, "interTokenMillis is null");
        requireNonNull(error, "error is null");
    }

    public static RequestResult failed(int index, int[] outputIds, String error)
    {
        return new RequestResult(index, outputIds, Double.NaN, new double[0], Optional.of(error));
    }

    public boolean completed()
    {
        return error.isEmpty();
    }
}
