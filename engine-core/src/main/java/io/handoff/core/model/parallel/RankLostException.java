package io.handoff.core.model.parallel;

/** A rank of the tensor-parallel group died, closed its link or stopped answering: the step it was in cannot complete. */
public final class RankLostException
        extends RuntimeException
{
    private final int rank;
    private final String reason;

    public RankLostException(int rank, String reason)
    {
        this(rank, reason, null);
    }

    public RankLostException(int rank, String reason, Throwable cause)
    {
        super("rank " + rank + " lost: " + reason, cause);
        this.rank = rank;
        this.reason = reason;
    }

    /** What happened to the rank, without its number. */
    public String reason()
    {
        return reason;
    }

    public int rank()
    {
        return rank;
    }
}
