package io.handoff.core.model.activation;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * What a matrix's input is rounded to before the product, as llama.cpp's CPU build rounds it for the weight types it
 * multiplies in integers: {@link #Q8_0} (blocks of 32, an F16 scale each) for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1, and
 * {@link #Q8_K} (blocks of 256, an F32 scale each) for the K-quants. An input rounded here is the exact value its
 * codes stand for ({@code scale * code}), so a product over it has the value llama.cpp's integer product has, up to
 * the order of the F32 additions. Each token's input is rounded on its own, so a token's result does not depend on
 * the batch it runs in.
 */
public enum ActivationFormat
{
    /** The input as it is. */
    F32(1),
    /** ggml's quantize_row_q8_0 as its AVX2 build runs it: scale {@code max|x| / 127} kept in F16, codes {@code rint(x * 127 / max|x|)}. */
    Q8_0(32),
    /** ggml's quantize_row_q8_K: scale {@code 1 / iscale} in F32 for {@code iscale = -127 / x_m}, {@code x_m} the first value of largest magnitude, codes rounded half to even and at most 127. */
    Q8_K(256);

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = F.length();
    private static final VectorSpecies<Byte> BYTES = ByteVector.SPECIES_64;
    // 1.5 * 2^23: adding it and taking it away again rounds a float of magnitude below 2^22 to an integer, ties to even
    // (ggml's nearest_int, and AVX's round_ps as its quantize_row_q8_0 uses it)
    private static final float ROUNDING = 12582912f;

    // tokens per task of a parallel quantization
    private static final int TOKENS_PER_CHUNK = 16;

    private final int block;

    ActivationFormat(int block)
    {
        this.block = block;
    }

    /** Values per block: a matrix's width must be a multiple of it. */
    public int block()
    {
        return block;
    }

    /**
     * {@code tokens} tokens of {@code cols} values ({@code x[xOff + t * xStride ..]}) rounded to this format, each on its own.
     */
    public QuantizedInput quantize(float[] x, int xOff, int xStride, int tokens, int cols)
    {
        return quantize(x, xOff, xStride, tokens, cols, new ActivationBuffers(), (n, body) -> {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
        });
    }

    /**
     * {@link #quantize(float[], int, int, int, int)} into {@code buffers} (the result's arrays are theirs, overwritten by
     * their next use), the tokens in chunks run by {@code loop}: a prefill's inputs are megabytes, which neither a fresh
     * allocation nor one thread should write while the other cores wait. Each token is rounded on its own, so the same bits.
     */
    public QuantizedInput quantize(float[] x, int xOff, int xStride, int tokens, int cols, ActivationBuffers buffers, Loop loop)
    {
        if (this == F32) {
            throw new IllegalStateException("F32 inputs are not quantized");
        }
        if (cols % block != 0) {
            throw new IllegalArgumentException(cols + " values are not whole " + this + " blocks of " + block);
        }
        int blocks = cols / block;
        int subs = cols / 32;
        boolean byToken = tokens > 1;
        buffers.ensure(tokens, cols, blocks, byToken);
        float[] codes = buffers.codes;
        float[] scales = buffers.scales;
        int[] sums = buffers.sums;
        float[] blockSums = buffers.blockSums;
        int chunks = (tokens + TOKENS_PER_CHUNK - 1) / TOKENS_PER_CHUNK;
        loop.forEach(chunks, chunk -> {
            int end = Math.min(tokens, (chunk + 1) * TOKENS_PER_CHUNK);
            for (int t = chunk * TOKENS_PER_CHUNK; t < end; t++) {
                quantizeToken(x, xOff + t * xStride, t, cols, blocks, codes, scales, sums, blockSums);
                if (byToken) {
                    transpose(buffers, t, tokens, cols, blocks, subs);
                }
            }
        });
        QuantizedInput.TokenMinor minor = byToken
                ? new QuantizedInput.TokenMinor(buffers.minorScales, buffers.minorBlockSums, buffers.minorSums, buffers.bytes) : null;
        return new QuantizedInput(this, tokens, cols, codes, scales, sums, blockSums, minor);
    }

    /** Runs {@code body} for {@code 0 .. n-1}, in any order and on any threads, and returns when all have run. */
    @FunctionalInterface
    public interface Loop
    {
        void forEach(int n, java.util.function.IntConsumer body);
    }

    private void quantizeToken(float[] x, int in, int t, int cols, int blocks, float[] codes, float[] scales, int[] sums, float[] blockSums)
    {
        for (int b = 0; b < blocks; b++) {
            int out = t * cols + b * block;
            scales[t * blocks + b] = this == Q8_0 ? q8_0(x, in + b * block, codes, out) : q8_k(x, in + b * block, codes, out);
        }
        for (int j = 0; j < cols / 32; j++) {
            int c = t * cols + 32 * j;
            // at most 32 * 127 in magnitude: every partial sum is exact
            FloatVector v = FloatVector.fromArray(F, codes, c).add(FloatVector.fromArray(F, codes, c + L))
                    .add(FloatVector.fromArray(F, codes, c + 2 * L).add(FloatVector.fromArray(F, codes, c + 3 * L)));
            int sum = (int) v.reduceLanes(VectorOperators.ADD);
            sums[t * cols / 32 + j] = sum;
            blockSums[t * cols / 32 + j] = this == Q8_0 ? Float.float16ToFloat(Float.floatToFloat16(scales[t * blocks + j] * sum)) : 0f;
        }
    }

    /** Token {@code t}'s scales and sums token-minor, and its codes as bytes ({@link QuantizedInput.TokenMinor}). */
    private static void transpose(ActivationBuffers buffers, int t, int tokens, int cols, int blocks, int subs)
    {
        for (int b = 0; b < blocks; b++) {
            buffers.minorScales[b * tokens + t] = buffers.scales[t * blocks + b];
        }
        for (int j = 0; j < subs; j++) {
            buffers.minorBlockSums[j * tokens + t] = buffers.blockSums[t * subs + j];
            buffers.minorSums[j * tokens + t] = buffers.sums[t * subs + j];
        }
        float[] codes = buffers.codes;
        byte[] bytes = buffers.bytes;
        // integers of at most 127 in magnitude: exact as bytes
        for (int i = t * cols; i < (t + 1) * cols; i += L) {
            FloatVector.fromArray(F, codes, i).convertShape(VectorOperators.F2B, BYTES, 0).reinterpretAsBytes().intoArray(bytes, i);
        }
    }

    /** One block of ggml's AVX2 quantize_row_q8_0: the codes into {@code codes[at..]}, the F16-rounded scale returned. */
    private static float q8_0(float[] x, int xOff, float[] codes, int at)
    {
        FloatVector m = FloatVector.fromArray(F, x, xOff).abs();
        for (int i = L; i < 32; i += L) {
            m = m.max(FloatVector.fromArray(F, x, xOff + i).abs());
        }
        float amax = m.reduceLanes(VectorOperators.MAX);
        FloatVector inverse = FloatVector.broadcast(F, amax != 0 ? 127f / amax : 0);
        for (int i = 0; i < 32; i += L) {
            FloatVector.fromArray(F, x, xOff + i).mul(inverse).add(ROUNDING).sub(ROUNDING).intoArray(codes, at + i);
        }
        return Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
    }

    /** One block of ggml's quantize_row_q8_K: the codes into {@code codes[at..]}, the scale returned. */
    private static float q8_k(float[] x, int xOff, float[] codes, int at)
    {
        FloatVector m = FloatVector.fromArray(F, x, xOff).abs();
        for (int i = L; i < 256; i += L) {
            m = m.max(FloatVector.fromArray(F, x, xOff + i).abs());
        }
        float amax = m.reduceLanes(VectorOperators.MAX);
        if (amax == 0) {
            java.util.Arrays.fill(codes, at, at + 256, 0);
            return 0;
        }
        // the first value of largest magnitude gives the sign, as ggml's strict '>' scan does
        int first = 0;
        while (true) {
            int lane = FloatVector.fromArray(F, x, xOff + first).abs().eq(amax).firstTrue();
            if (lane < L) {
                first += lane;
                break;
            }
            first += L;
        }
        float iscale = -127f / x[xOff + first];
        FloatVector scale = FloatVector.broadcast(F, iscale);
        FloatVector most = FloatVector.broadcast(F, 127f);
        for (int i = 0; i < 256; i += L) {
            FloatVector.fromArray(F, x, xOff + i).mul(scale).add(ROUNDING).sub(ROUNDING).min(most).intoArray(codes, at + i);
        }
        return 1 / iscale;
    }

}
