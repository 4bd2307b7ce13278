package io.handoff.core.model.activation;

/**
 * Tokens rounded to an {@link ActivationFormat} other than F32, in the integer form a product over block-quantized weights
 * takes: per token {@code cols} codes (integers held as floats, exact), a scale per block ({@code value = scale * code}),
 * the sum of the codes of each 32 values (the K-quants fold their offsets in through them), and per 32-value block
 * llama.cpp's Q8_1 sum {@code fp16(scale * sum)}, which Q4_1 and Q5_1 multiply by their offset. With more than one token
 * {@code byToken} holds the scales and sums again, token-minor, so that a prefill's offset terms take eight tokens a lane
 * vector, and the codes again as bytes (every code is an integer of at most 127 in magnitude), which a prefill's product
 * widens a few tokens at a time where it multiplies them: read from memory as one byte a value instead of four.
 */
public record QuantizedInput(ActivationFormat format, int tokens, int cols, float[] codes, float[] scales, int[] sums, float[] blockSums,
        TokenMinor byToken)
{
    /**
     * {@code scales[b * tokens + t]}, {@code blockSums[j * tokens + t]}, {@code sums[j * tokens + t]} (block {@code b}, 32
     * values {@code j}; the sums as floats, exact); {@code bytes[t * cols + i] = codes[t * cols + i]}.
     */
    public record TokenMinor(float[] scales, float[] blockSums, float[] sums, byte[] bytes) {}
}
