package io.handoff.core.model;

import io.handoff.core.kv.PagedKvCache;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A KV pool, {@link ReferenceAttention} over it and a stand-in for the page allocator: slots are handed
 * out in a seeded shuffled order, so a request's positions land in scattered, non-contiguous slots and a
 * model that ignored {@code req_to_token} would fail. Also a minimal continuous-batching loop.
 */
final class ModelHarness
        implements AutoCloseable
{
    static final int PAGE_SIZE = 16;

    final Transformer model;
    final ModelRunner runner;
    final PagedKvCache kv;
    final AttentionBackend attention;
    private final Arena arena = Arena.ofConfined();
    private final int[] freeSlots;
    private int nextFree;

    ModelHarness(Transformer model, KvDtype dtype, int pages, long slotSeed)
    {
        this(model, model, dtype, pages, slotSeed);
    }

    /** Steps run through {@code runner} (a tensor-parallel group's leader), the pool and attention sized for {@code model}'s heads. */
    ModelHarness(Transformer model, ModelRunner runner, KvDtype dtype, int pages, long slotSeed)
    {
        ModelConfig config = model.config();
        this.model = model;
        this.runner = runner;
        this.kv = PagedKvCache.allocate(arena, config.layers(), pages, PAGE_SIZE, dtype,
                model.attentionGeometry().keyRowElements(), model.attentionGeometry().valueRowElements(), config.kvValuesInKeyRow());
        this.attention = new ReferenceAttention(model.attentionGeometry(), kv);
        this.freeSlots = new int[kv.slots()];
        Arrays.setAll(freeSlots, i -> i);
        SplittableRandom random = new SplittableRandom(slotSeed);
        for (int i = freeSlots.length - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = freeSlots[i];
            freeSlots[i] = freeSlots[j];
            freeSlots[j] = swap;
        }
    }

    /** A fresh req_to_token row with slots for {@code length} positions. */
    int[] allocate(int length)
    {
        int[] row = Arrays.copyOfRange(freeSlots, nextFree, nextFree + length);
        nextFree += length;
        return row;
    }

    float[][] forward(ForwardBatch.Builder builder)
    {
        return runner.forward(builder.build(attention::numKvSplits), kv, attention, Transformer.LayerHook.NONE);
    }

    float[][] forwardAllPositions(ForwardBatch.Builder builder)
    {
        ForwardBatch batch = builder.build(attention::numKvSplits);
        int[] rows = new int[batch.size()];
        Arrays.setAll(rows, i -> i);
        return runner.forwardRows(batch, kv, attention, Transformer.LayerHook.NONE, rows);
    }

    /** Prefills {@code prompt} in chunks of {@code chunk}; returns the logits of every position. */
    float[][] prefillAllPositions(int[] prompt, int[] reqToToken, int chunk)
    {
        List<float[]> logits = new ArrayList<>();
        for (int start = 0; start < prompt.length; start += chunk) {
            int[] part = Arrays.copyOfRange(prompt, start, Math.min(prompt.length, start + chunk));
            logits.addAll(List.of(forwardAllPositions(ForwardBatch.builder().extend(part, start, reqToToken))));
        }
        return logits.toArray(float[][]::new);
    }

    /**
     * Greedy continuous batching: request {@code i} arrives at step {@code i * stagger}, its prompt is
     * prefilled in chunks of {@code chunk} (sharing steps with other requests' chunks and decodes), the
     * first output token comes from the last chunk's logits, then one decode per step.
     */
    List<int[]> generate(List<int[]> prompts, int maxNew, int chunk, int stagger)
    {
        int count = prompts.size();
        int[][] rows = new int[count][];
        int[] prefilled = new int[count];
        List<List<Integer>> outputs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            rows[i] = allocate(prompts.get(i).length + maxNew);
            outputs.add(new ArrayList<>());
        }
        for (int step = 0; outputs.stream().anyMatch(o -> o.size() < maxNew); step++) {
            ForwardBatch.Builder builder = ForwardBatch.builder();
            List<Integer> extendOrder = new ArrayList<>();
            List<Integer> decodeOrder = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int[] prompt = prompts.get(i);
                List<Integer> output = outputs.get(i);
                if (step < i * stagger || output.size() >= maxNew) {
                    continue;
                }
                if (prefilled[i] < prompt.length) {
                    int end = Math.min(prompt.length, prefilled[i] + chunk);
                    builder.extend(Arrays.copyOfRange(prompt, prefilled[i], end), prefilled[i], rows[i]);
                    prefilled[i] = end;
                    if (end == prompt.length) {
                        extendOrder.add(i);
                    }
                    else {
                        extendOrder.add(-1 - i);
                    }
                }
                else {
                    builder.decode(output.getLast(), prompt.length + output.size() - 1, rows[i]);
                    decodeOrder.add(i);
                }
            }
            if (extendOrder.isEmpty() && decodeOrder.isEmpty()) {
                continue;
            }
            float[][] logits = forward(builder);
            List<Integer> order = new ArrayList<>(extendOrder);
            order.addAll(decodeOrder);
            for (int r = 0; r < order.size(); r++) {
                if (order.get(r) >= 0) {
                    outputs.get(order.get(r)).add(Sampler.argmax(logits[r]));
                }
            }
        }
        return outputs.stream().map(o -> o.stream().mapToInt(Integer::intValue).toArray()).toList();
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
