package io.handoff.bench.scheduler;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.model.Transformer;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.KvCacheView;

import java.util.Arrays;

import static java.util.Objects.requireNonNull;

/**
 * The benchmark's model that does no math: its forward returns at once, the same fixed logits row for every
 * row asked for (greedy sampling then always picks {@link #token()}), and writes no KV. With it a step costs only what
 * the scheduler does around the model: admission, page allocation and release, radix match and insert, batch
 * building, sampling and token delivery. Only {@code handoff bench scheduler} builds one; it is no
 * {@code handoff.model.name} and cannot be served.
 */
final class FixedLogitsModel
        implements ModelRunner
{
    private final ModelConfig config;
    private final float[] logits;
    private final int token;

    FixedLogitsModel(ModelConfig config)
    {
        this.config = requireNonNull(config, "config is null");
        this.logits = new float[config.vocabSize()];
        // a printable byte when the vocabulary has one: any id works, since the bench's requests ignore EOS
        this.token = Math.min('a', config.vocabSize() - 1);
        logits[token] = 1;
    }

    int token()
    {
        return token;
    }

    @Override
    public ModelConfig config()
    {
        return config;
    }

    @Override
    public float[][] forwardRows(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook, int[] logitRows)
    {
        float[][] rows = new float[logitRows.length][];
        Arrays.fill(rows, logits);
        return rows;
    }
}
