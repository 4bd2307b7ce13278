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
    float[][] forward(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, Transformer.LayerHook hook);
}
