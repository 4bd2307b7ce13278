package io.handoff.core.model.parallel;

/**
 * How the ranks of a tensor-parallel group exchange what each computed, in lockstep: every rank makes the same calls in
 * the same order. A call that cannot complete because a rank is gone throws {@link RankLostException}.
 */
public interface Collective
{
    /** The single rank: nothing to exchange. */
    Collective NONE = new Collective()
    {
        @Override
        public TensorShard shard()
        {
            return TensorShard.WHOLE;
        }

        @Override
        public void allGather(float[] buf, Pieces pieces) {}

        @Override
        public void gather(float[] buf, Pieces pieces) {}
    };

    TensorShard shard();

    /** Each rank holds its own pieces of {@code buf}; afterwards every rank holds every rank's. */
    void allGather(float[] buf, Pieces pieces);

    /** Each rank holds its own pieces of {@code buf}; afterwards rank 0 holds every rank's (the others' are unchanged). */
    void gather(float[] buf, Pieces pieces);
}
