package io.handoff.core.model;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Deterministic weights from a seed: each tensor is drawn from its own {@link SplittableRandom}, seeded
 * from the model seed and the tensor's name, so a tensor does not depend on which others were loaded
 * or in what order. Matrices are uniform with variance {@code 1 / fan_in} (fan_in = the last dim), which
 * keeps activations near unit scale through every layer; vectors (norm weights) are ones, except that
 * biases are uniform in {@code [-1, 1)} and per-head q/k norm weights uniform in {@code [1, 3)} (sharp attention, see
 * {@link #gain}), so that a loader or transformer ignoring them shows in the logits. Uniform
 * rather than Gaussian so the values need nothing but exact double arithmetic to reproduce.
 */
public final class SyntheticWeights
        implements WeightSource
{
    private final long seed;

    public SyntheticWeights(long seed)
    {
        this.seed = seed;
    }

    @Override
    public float[] floats(String name, int... shape)
    {
        if (shape.length < 1 || shape.length > 2 || Arrays.stream(shape).anyMatch(d -> d < 1)) {
            throw new IllegalArgumentException("tensor '" + name + "': unsupported shape " + Arrays.toString(shape));
        }
        int count = Math.multiplyExact(shape[0], shape.length == 2 ? shape[1] : 1);
        float[] values = new float[count];
        SplittableRandom random = new SplittableRandom(mix(seed, name));
        if (shape.length == 1) {
            boolean bias = name.endsWith(".bias");
            boolean qkNorm = name.endsWith("self_attn.q_norm.weight") || name.endsWith("self_attn.k_norm.weight");
            for (int i = 0; i < count; i++) {
                values[i] = bias ? (float) (2 * random.nextDouble() - 1) : qkNorm ? (float) (1 + 2 * random.nextDouble()) : 1f;
            }
            return values;
        }
        double bound = gain(name) * Math.sqrt(3.0 / shape[1]);
        for (int i = 0; i < count; i++) {
            values[i] = (float) ((2 * random.nextDouble() - 1) * bound);
        }
        return values;
    }

    /**
     * Query and key projections of GQA layers (and MLA's query up-projection) are drawn wider: with unit-variance q and k, random attention
     * is nearly uniform over a long context, every position sees the same average and greedy output
     * collapses to one token. Sharper attention keeps outputs tied to the prompt, which is what makes a
     * corrupted KV row visible in them.
     */
    private static double gain(String name)
    {
        if (name.endsWith("self_attn.q_proj.weight") || name.endsWith("self_attn.k_proj.weight")) {
            return GQA_QK_GAIN;
        }
        // MLA: the latent key is RMS-normalised, so the query alone sets how sharp attention is
        return name.endsWith("self_attn.q_b_proj.weight") ? MLA_Q_GAIN : 1.0;
    }

    private static final double GQA_QK_GAIN = 3.0;
    private static final double MLA_Q_GAIN = 4.0;

    @Override
    public String description()
    {
        return "seeded weights (seed " + seed + ")";
    }

    /** FNV-1a over the name's UTF-8 bytes, folded into the seed with a murmur finalizer. */
    private static long mix(long seed, String name)
    {
        long hash = 0xcbf29ce484222325L;
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
        }
        long z = seed ^ hash;
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return z ^ (z >>> 33);
    }
}
