package io.handoff.core.model.activation;

/**
 * Tokens rounded to an {@link ActivationFormat} other than F32, in the integer form a product over block-quantized weights
 * takes: per token {@code cols} codes (integers held as floats, exact), a scale per block ({@code value = scale * code}),
 * the sum of the codes of each 32 values (the K-quants fold their offsets in through them), and per 32-value block
 * llama.cpp's Q8_1 sum {@code fp16(scale * sum)}, which Q4_1 and Q5_1 multiply by their offset. With more than one token
 * {@code byToken} holds the scales and sums again, token-minor, so that a prefill's offset terms take eight tokens a lane
 * vector, and the codes with each eight of them twice, so that one 16-lane load meets the codes of two weight rows laid
 * side by side.
 */
public record QuantizedInput(ActivationFormat format, int tokens, int cols, float[] codes, float[] scales, int[] sums, float[] blockSums,
        TokenMinor byToken)
{
    /**
     * {@code scales[b * tokens + t]}, {@code blockSums[j * tokens + t]}, {@code sums[j * tokens + t]} (block {@code b}, 32
     * values {@code j}; the sums as floats, exact); {@code doubledCodes[t * 2 * cols + 16 * (i / 8) + 8 * h + i % 8] = codes[t * cols + i]} for
     * {@code h} 0 and 1.
     */
    public record TokenMinor(float[] scales, float[] blockSums, float[] sums, float[] doubledCodes) {}
}
