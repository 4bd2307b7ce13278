package io.handoff.core.model;

import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.KvCacheView;

/**
 * What the scheduler runs each step: a forward pass from a {@link ForwardBatch} to the next-token logits of each
 * request. {@link Transformer} is the one the engine serves; a benchmark may substitute another to time the
 * scheduler without the model's arithmetic.
 */
public interface ModelRunner
{
    ModelConfig config();

    /**
     * Runs one step and returns the next-token logits of each request, {@code [requests][vocab]}: extend requests
     * in batch order, then decode requests. {@code hook} runs after each layer.
     */
    default float[][] forward(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook)
    {
        return forwardRows(batch, kv, attention, hook, batch.lastTokenRows());
    }

    /**
     * Runs one step and returns the logits at the batch's token rows {@code logitRows} (indexes into its tokens, in any order),
     * {@code [logitRows.length][vocab]}: a row's logits are the same bits whichever other rows are asked for.
     */
    float[][] forwardRows(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook, int[] logitRows);
}
