package io.handoff.chaos;

import static java.util.Objects.requireNonNull;

/**
 * How one soak request ended, as its client saw it: exactly one of completed, aborted (the client asked for it),
 * failed (with the cause the servers named, or what went wrong on the connection) and hung (no end by its deadline).
 *
 * @param outputIds the output tokens that arrived (all of them, for a completed request)
 * @param cause for a failed request: the {@code cause} of the servers' error, or a word for what the client saw
 *         ({@code http_503}, {@code stream_broken}); empty otherwise
 * @param detail the error's message, for the report's examples
 */
public record RequestOutcome(int index, Kind kind, int[] outputIds, String cause, String detail, AbortPlan plan)
{
    public enum Kind
    {
        COMPLETED, ABORTED, FAILED, HUNG
    }

    public RequestOutcome
    {
        requireNonNull(kind, "kind is null");
        requireNonNull(outputIds, "outputIds is null");
        requireNonNull(cause, "cause is null");
        requireNonNull(detail, "detail is null");
        requireNonNull(plan, "plan is null");
    }

    static RequestOutcome completed(int index, int[] ids, AbortPlan plan)
    {
        return new RequestOutcome(index, Kind.COMPLETED, ids, "", "", plan);
    }

    static RequestOutcome aborted(int index, int[] ids, AbortPlan plan)
    {
        return new RequestOutcome(index, Kind.ABORTED, ids, "", "", plan);
    }

    static RequestOutcome failed(int index, int[] ids, String cause, String detail, AbortPlan plan)
    {
        return new RequestOutcome(index, Kind.FAILED, ids, cause, detail, plan);
    }

    static RequestOutcome hung(int index, int[] ids, String detail, AbortPlan plan)
    {
        return new RequestOutcome(index, Kind.HUNG, ids, "", detail, plan);
    }
}
