package io.handoff.core.model.gguf;

import io.handoff.core.model.ModelConfig;

import java.nio.file.Path;
import java.util.Arrays;

/**
 * DeepSeek's {@code kv_b_proj} ({@code [heads * (nope + v), kv_lora_rank]}: per head its key rows, then its value rows)
 * from the pair llama.cpp's converter writes instead: {@code attn_k_b [heads, kv_lora_rank, nope]} (the key rows,
 * transposed per head) and {@code attn_v_b [heads, v, kv_lora_rank]}.
 */
final class MlaKvB
{
    private static final String SUFFIX = ".self_attn.kv_b_proj.weight";

    private MlaKvB() {}

    static boolean isKvB(String hfName)
    {
        return hfName.startsWith("model.layers.") && hfName.endsWith(SUFFIX);
    }

    static float[] join(GgufWeights weights, Path path, String hfName, ModelConfig c, int... shape)
    {
        int heads = c.heads();
        int nope = c.qkNopeHeadDim();
        int v = c.vHeadDim();
        int rank = c.kvLoraRank();
        if (!Arrays.equals(shape, new int[] {heads * (nope + v), rank})) {
            throw new IllegalArgumentException(path + ": '" + hfName + "' is read as " + Arrays.toString(shape) + ", not the model's ["
                    + heads * (nope + v) + ", " + rank + "]");
        }
        String block = "blk." + hfName.substring("model.layers.".length(), hfName.length() - SUFFIX.length()) + ".";
        float[] kB = weights.rawFloats(block + "attn_k_b.weight", hfName, heads, rank, nope);
        float[] vB = weights.rawFloats(block + "attn_v_b.weight", hfName, heads, v, rank);
        float[] kvB = new float[heads * (nope + v) * rank];
        for (int h = 0; h < heads; h++) {
            int base = h * (nope + v) * rank;
            for (int j = 0; j < rank; j++) {
                for (int i = 0; i < nope; i++) {
                    kvB[base + i * rank + j] = kB[(h * rank + j) * nope + i];
                }
            }
            System.arraycopy(vB, h * v * rank, kvB, base + nope * rank, v * rank);
        }
        return kvB;
    }
}
