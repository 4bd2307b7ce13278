package io.handoff.core.model;

import java.util.HashMap;
import java.util.Map;

/**
 * The architectures written the textbook way, in double precision, straight from the checkpoint tensors:
 * dense causal attention, no KV pool, and MLA in its unabsorbed form (keys and values expanded from the
 * latent by {@code kv_b_proj}) with DeepSeek's de-interleaving RoPE; GQA with Qwen2's q/k/v biases, Qwen3's per-head
 * q/k RMSNorm and Llama 3.1's RoPE frequency remapping when the config asks. A yardstick for {@link Transformer}.
 */
final class NaiveTransformer
{
    private final ModelConfig c;
    private final WeightSource w;
    private final Map<String, float[]> tensors = new HashMap<>();

    NaiveTransformer(ModelConfig config, WeightSource weights)
    {
        this.c = config;
        this.w = weights;
    }

    double[][] logits(int[] tokens)
    {
        int n = tokens.length;
        int hidden = c.hiddenSize();
        float[] embedding = tensor("model.embed_tokens.weight", c.vocabSize(), hidden);
        double[][] x = new double[n][hidden];
        for (int t = 0; t < n; t++) {
            for (int i = 0; i < hidden; i++) {
                x[t][i] = embedding[tokens[t] * hidden + i];
            }
        }
        for (int l = 0; l < c.layers(); l++) {
            String p = "model.layers." + l + ".";
            double[][] xn = new double[n][];
            for (int t = 0; t < n; t++) {
                xn[t] = norm(x[t], tensor(p + "input_layernorm.weight", hidden));
            }
            double[][] attention = c.architecture() == Architecture.MLA ? mla(p + "self_attn.", xn) : gqa(p + "self_attn.", xn);
            for (int t = 0; t < n; t++) {
                double[] out = linear(tensor(p + "self_attn.o_proj.weight", hidden, attention[t].length), attention[t], hidden);
                add(x[t], out);
                double[] h = norm(x[t], tensor(p + "post_attention_layernorm.weight", hidden));
                double[] gate = linear(tensor(p + "mlp.gate_proj.weight", c.intermediateSize(), hidden), h, c.intermediateSize());
                double[] up = linear(tensor(p + "mlp.up_proj.weight", c.intermediateSize(), hidden), h, c.intermediateSize());
                for (int i = 0; i < gate.length; i++) {
                    gate[i] = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
                }
                add(x[t], linear(tensor(p + "mlp.down_proj.weight", hidden, c.intermediateSize()), gate, hidden));
            }
        }
        double[][] logits = new double[n][];
        for (int t = 0; t < n; t++) {
            float[] head = c.tieWordEmbeddings() ? embedding : tensor("lm_head.weight", c.vocabSize(), hidden);
            logits[t] = linear(head, norm(x[t], tensor("model.norm.weight", hidden)), c.vocabSize());
        }
        return logits;
    }

    private double[][] gqa(String p, double[][] xn)
    {
        int n = xn.length;
        int d = c.headDim();
        int hidden = c.hiddenSize();
        double[][] q = new double[n][];
        double[][] k = new double[n][];
        double[][] v = new double[n][];
        for (int t = 0; t < n; t++) {
            q[t] = linear(tensor(p + "q_proj.weight", c.heads() * d, hidden), xn[t], c.heads() * d);
            k[t] = linear(tensor(p + "k_proj.weight", c.kvHeads() * d, hidden), xn[t], c.kvHeads() * d);
            v[t] = linear(tensor(p + "v_proj.weight", c.kvHeads() * d, hidden), xn[t], c.kvHeads() * d);
            if (c.attentionBias()) {
                add(q[t], tensor(p + "q_proj.bias", c.heads() * d));
                add(k[t], tensor(p + "k_proj.bias", c.kvHeads() * d));
                add(v[t], tensor(p + "v_proj.bias", c.kvHeads() * d));
            }
            for (int h = 0; h < c.heads(); h++) {
                if (c.qkNorm()) {
                    normHead(q[t], h * d, d, tensor(p + "q_norm.weight", d));
                }
                rotateHalf(q[t], h * d, d, t);
            }
            for (int h = 0; h < c.kvHeads(); h++) {
                if (c.qkNorm()) {
                    normHead(k[t], h * d, d, tensor(p + "k_norm.weight", d));
                }
                rotateHalf(k[t], h * d, d, t);
            }
        }
        int group = c.heads() / c.kvHeads();
        double[][] out = new double[n][c.heads() * d];
        for (int t = 0; t < n; t++) {
            for (int h = 0; h < c.heads(); h++) {
                int kvHead = h / group;
                double[] keys = new double[(t + 1) * d];
                double[] values = new double[(t + 1) * d];
                for (int s = 0; s <= t; s++) {
                    System.arraycopy(k[s], kvHead * d, keys, s * d, d);
                    System.arraycopy(v[s], kvHead * d, values, s * d, d);
                }
                attend(q[t], h * d, keys, values, d, d, t + 1, 1 / Math.sqrt(d), out[t], h * d);
            }
        }
        return out;
    }

    private double[][] mla(String p, double[][] xn)
    {
        int n = xn.length;
        int hidden = c.hiddenSize();
        int nope = c.qkNopeHeadDim();
        int rope = c.qkRopeHeadDim();
        int qHead = nope + rope;
        int rank = c.kvLoraRank();
        int vDim = c.vHeadDim();
        float[] kvB = tensor(p + "kv_b_proj.weight", c.heads() * (nope + vDim), rank);
        double[][] q = new double[n][];
        double[][] keys = new double[n][];
        double[][] values = new double[n][];
        for (int t = 0; t < n; t++) {
            double[] qa = linear(tensor(p + "q_a_proj.weight", c.qLoraRank(), hidden), xn[t], c.qLoraRank());
            q[t] = linear(tensor(p + "q_b_proj.weight", c.heads() * qHead, c.qLoraRank()),
                    norm(qa, tensor(p + "q_a_layernorm.weight", c.qLoraRank())), c.heads() * qHead);
            double[] kva = linear(tensor(p + "kv_a_proj_with_mqa.weight", rank + rope, hidden), xn[t], rank + rope);
            double[] latent = new double[rank];
            System.arraycopy(kva, 0, latent, 0, rank);
            latent = norm(latent, tensor(p + "kv_a_layernorm.weight", rank));
            double[] kRope = deinterleavedRope(kva, rank, rope, t);
            double[] kv = linear(kvB, latent, c.heads() * (nope + vDim));
            keys[t] = new double[c.heads() * qHead];
            values[t] = new double[c.heads() * vDim];
            for (int h = 0; h < c.heads(); h++) {
                System.arraycopy(kv, h * (nope + vDim), keys[t], h * qHead, nope);
                System.arraycopy(kRope, 0, keys[t], h * qHead + nope, rope);
                System.arraycopy(kv, h * (nope + vDim) + nope, values[t], h * vDim, vDim);
                double[] qRope = deinterleavedRope(q[t], h * qHead + nope, rope, t);
                System.arraycopy(qRope, 0, q[t], h * qHead + nope, rope);
            }
        }
        double[][] out = new double[n][c.heads() * vDim];
        for (int t = 0; t < n; t++) {
            for (int h = 0; h < c.heads(); h++) {
                double[] k = new double[(t + 1) * qHead];
                double[] v = new double[(t + 1) * vDim];
                for (int s = 0; s <= t; s++) {
                    System.arraycopy(keys[s], h * qHead, k, s * qHead, qHead);
                    System.arraycopy(values[s], h * vDim, v, s * vDim, vDim);
                }
                attend(q[t], h * qHead, k, v, qHead, vDim, t + 1, 1 / Math.sqrt(qHead), out[t], h * vDim);
            }
        }
        return out;
    }

    private float[] tensor(String name, int... shape)
    {
        return tensors.computeIfAbsent(name, key -> w.floats(key, shape));
    }

    private static void attend(double[] q, int qOff, double[] keys, double[] values, int qk, int vd, int count, double scale,
            double[] out, int outOff)
    {
        double[] scores = new double[count];
        double max = Double.NEGATIVE_INFINITY;
        for (int s = 0; s < count; s++) {
            for (int i = 0; i < qk; i++) {
                scores[s] += q[qOff + i] * keys[s * qk + i];
            }
            scores[s] *= scale;
            max = Math.max(max, scores[s]);
        }
        double sum = 0;
        for (int s = 0; s < count; s++) {
            scores[s] = Math.exp(scores[s] - max);
            sum += scores[s];
        }
        for (int s = 0; s < count; s++) {
            for (int i = 0; i < vd; i++) {
                out[outOff + i] += scores[s] / sum * values[s * vd + i];
            }
        }
    }

    /** RMSNorm of one head's {@code d} values in place. */
    private void normHead(double[] x, int off, int d, float[] weight)
    {
        double[] head = new double[d];
        System.arraycopy(x, off, head, 0, d);
        System.arraycopy(norm(head, weight), 0, x, off, d);
    }

    /** Llama: pairs {@code (i, i + d/2)}. */
    private void rotateHalf(double[] x, int off, int d, int pos)
    {
        for (int i = 0; i < d / 2; i++) {
            double angle = pos * frequency(i, Math.pow(c.ropeTheta(), -2.0 * i / d));
            double a = x[off + i];
            double b = x[off + i + d / 2];
            x[off + i] = a * Math.cos(angle) - b * Math.sin(angle);
            x[off + i + d / 2] = b * Math.cos(angle) + a * Math.sin(angle);
        }
    }

    /** Transformers' {@code _compute_llama3_parameters}, one frequency at a time: scale the long wavelengths, blend the middle band. */
    private double frequency(int i, double inv)
    {
        if (c.ropeScaling() instanceof RopeScaling.FrequencyDivisors f) {
            return inv / f.divisors().get(i);
        }
        if (!(c.ropeScaling() instanceof RopeScaling.Llama3 s)) {
            return inv;
        }
        double wavelen = 2 * Math.PI / inv;
        double lowFreqWavelen = s.originalMaxPositions() / (double) s.lowFreqFactor();
        double highFreqWavelen = s.originalMaxPositions() / (double) s.highFreqFactor();
        double scaled = wavelen > lowFreqWavelen ? inv / s.factor() : inv;
        boolean medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
        if (!medium) {
            return scaled;
        }
        double smooth = (s.originalMaxPositions() / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
        return (1 - smooth) * scaled / s.factor() + smooth * scaled;
    }

    /** DeepSeek: de-interleave {@code [x0, x2, …, x1, x3, …]}, then rotate half. */
    private double[] deinterleavedRope(double[] x, int off, int d, int pos)
    {
        double[] y = new double[d];
        for (int i = 0; i < d / 2; i++) {
            y[i] = x[off + 2 * i];
            y[i + d / 2] = x[off + 2 * i + 1];
        }
        rotateHalf(y, 0, d, pos);
        return y;
    }

    private double[] norm(double[] x, float[] weight)
    {
        double squares = 0;
        for (double v : x) {
            squares += v * v;
        }
        double inv = 1 / Math.sqrt(squares / x.length + c.rmsEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * inv * weight[i];
        }
        return out;
    }

    private static double[] linear(float[] weight, double[] x, int rows)
    {
        double[] out = new double[rows];
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < x.length; i++) {
                out[r] += weight[r * x.length + i] * x[i];
            }
        }
        return out;
    }

    private static void add(double[] x, double[] delta)
    {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }

    private static void add(double[] x, float[] delta)
    {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }
}
