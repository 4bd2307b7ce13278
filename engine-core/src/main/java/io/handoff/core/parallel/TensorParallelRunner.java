package io.handoff.core.parallel;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.model.Transformer;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.KvCacheView;

import static java.util.Objects.requireNonNull;

/** The leader's model: each step sent to every rank, then rank 0's part of it run here; the logits come back whole. */
public final class TensorParallelRunner
        implements ModelRunner
{
    private final Transformer rank0;
    private final RankGroup group;

    public TensorParallelRunner(Transformer rank0, RankGroup group)
    {
        this.rank0 = requireNonNull(rank0, "rank0 is null");
        this.group = requireNonNull(group, "group is null");
    }

    @Override
    public ModelConfig config()
    {
        return rank0.config();
    }

    @Override
    public float[][] forwardRows(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook, int[] logitRows)
    {
        group.broadcast(batch, logitRows);
        return rank0.forwardRows(batch, kv, attention, hook, logitRows);
    }
}
