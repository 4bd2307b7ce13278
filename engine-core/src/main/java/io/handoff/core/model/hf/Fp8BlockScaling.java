package io.handoff.core.model.hf;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * config.json's {@code quantization_config} for FP8 weights as DeepSeek-V3 ships them: {@code "quant_method": "fp8",
 * "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [rows, cols]}. Each quantized linear layer's
 * {@code weight} is {@code F8_E4M3} with a companion F32 {@code weight_scale_inv} of one scale per block; the engine
 * multiplies F32 activations by the dequantized weights, so the dynamic activation scheme needs nothing at run time.
 */
public record Fp8BlockScaling(int blockRows, int blockCols)
{
    public static final String KEY = "quantization_config";
    /** Appended to a quantized tensor's name to name its scales. */
    public static final String SCALE_SUFFIX = "_scale_inv";
    /** A block's width is a power of two from this (one step of the engine's products) up. */
    public static final int MIN_WIDTH = 32;

    public Fp8BlockScaling
    {
        if (blockRows < 1 || blockCols < MIN_WIDTH || Integer.bitCount(blockCols) != 1) {
            throw new IllegalArgumentException("FP8 blocks of " + blockRows + " x " + blockCols + " are not supported: the rows must be "
                    + "positive and the width a power of two from " + MIN_WIDTH + " (DeepSeek-V3's are 128 x 128)");
        }
    }

    /** The name of {@code tensor}'s scales. */
    public static String scaleName(String tensor)
    {
        return tensor + SCALE_SUFFIX;
    }

    /**
     * The scaling {@code config} declares, or empty when it has no {@code quantization_config}; any other quantization method
     * or format is refused naming the file and the field.
     */
    public static Optional<Fp8BlockScaling> fromConfig(Map<String, Object> config, String source)
    {
        ConfigFields top = new ConfigFields(config, source);
        if (!top.has(KEY)) {
            return Optional.empty();
        }
        ConfigFields q = new ConfigFields(top.objectOrEmpty(KEY), source + " " + KEY);
        String method = q.string("quant_method", "");
        if (!method.equals("fp8")) {
            throw new IllegalArgumentException(q.source() + ": \"quant_method\" is \"" + method + "\"; the engine reads only \"fp8\" "
                    + "(E4M3 weights with block scales, as DeepSeek-V3 ships them): use an unquantized (bfloat16) checkpoint");
        }
        String format = q.string("fmt", "e4m3");
        if (!format.equals("e4m3")) {
            throw new IllegalArgumentException(q.source() + ": \"fmt\" is \"" + format + "\"; only \"e4m3\" FP8 weights are read "
                    + "(convert the checkpoint to bfloat16 or to e4m3)");
        }
        String activations = q.string("activation_scheme", "dynamic");
        if (!activations.equals("dynamic")) {
            throw new IllegalArgumentException(q.source() + ": \"activation_scheme\" is \"" + activations + "\"; only \"dynamic\" is "
                    + "read (static activation scales are not applied): use a checkpoint with dynamic activations or bfloat16 weights");
        }
        if (!(q.config().get("weight_block_size") instanceof List<?> size) || size.size() != 2
                || !(size.get(0) instanceof Long rows) || !(size.get(1) instanceof Long cols)
                || rows < 1 || cols < 1 || rows > Integer.MAX_VALUE || cols > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(q.source() + ": \"weight_block_size\" must be [rows, cols], two positive integers (DeepSeek-V3 "
                    + "writes [128, 128]), was " + q.config().get("weight_block_size")
                    + "; per-tensor or per-channel FP8 scales are not read");
        }
        try {
            return Optional.of(new Fp8BlockScaling((int) (long) rows, (int) (long) cols));
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(q.source() + ": \"weight_block_size\" " + size + ": " + e.getMessage(), e);
        }
    }
}
