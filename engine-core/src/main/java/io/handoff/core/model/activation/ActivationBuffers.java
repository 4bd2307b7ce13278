package io.handoff.core.model.activation;

/**
 * The arrays a {@link QuantizedInput} is written into, kept from one product to the next so that a prefill's inputs (megabytes
 * a matrix) are neither allocated nor zeroed each time; they only grow. One owner at a time: a quantized input lives until its
 * product returns, and the next quantization into the same buffers overwrites it.
 */
public final class ActivationBuffers
{
    float[] codes = new float[0];
    float[] scales = new float[0];
    int[] sums = new int[0];
    float[] blockSums = new float[0];
    float[] minorScales = new float[0];
    float[] minorBlockSums = new float[0];
    float[] minorSums = new float[0];
    byte[] bytes = new byte[0];

    /** Room for {@code tokens} tokens of {@code cols} values in {@code blocks} blocks, and their token-minor copies if {@code byToken}. */
    void ensure(int tokens, int cols, int blocks, boolean byToken)
    {
        int values = Math.multiplyExact(tokens, cols);
        int subs = values / 32;
        if (codes.length < values) {
            codes = new float[values];
        }
        if (scales.length < tokens * blocks) {
            scales = new float[tokens * blocks];
        }
        if (sums.length < subs) {
            sums = new int[subs];
            blockSums = new float[subs];
        }
        if (byToken) {
            if (minorScales.length < tokens * blocks) {
                minorScales = new float[tokens * blocks];
            }
            if (minorSums.length < subs) {
                minorSums = new float[subs];
                minorBlockSums = new float[subs];
            }
            if (bytes.length < values) {
                bytes = new byte[values];
            }
        }
    }
}
