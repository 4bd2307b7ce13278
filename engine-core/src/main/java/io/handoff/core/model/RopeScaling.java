package io.handoff.core.model;

/**
 * How a model remaps RoPE's inverse frequencies for a longer context than it was trained on.
 * {@link #NONE} leaves them as {@code theta^(-2i/dim)}; {@link Llama3} is Llama 3.1's remapping.
 */
public sealed interface RopeScaling
{
    RopeScaling NONE = new None();

    /** The inverse frequency the tables use instead of {@code inverseFrequency}. */
    double remap(double inverseFrequency);

    /** A stable text for {@link ModelConfig#compatibilityHash()}. */
    String canonical();

    record None()
            implements RopeScaling
    {
        @Override
        public double remap(double inverseFrequency)
        {
            return inverseFrequency;
        }

        @Override
        public String canonical()
        {
            return "none";
        }
    }

    /**
     * Llama 3.1's {@code rope_type: llama3}: wavelengths longer than {@code originalMaxPositions / lowFreqFactor} are
     * stretched by {@code factor}, shorter than {@code originalMaxPositions / highFreqFactor} kept, and the band between
     * blended linearly in {@code originalMaxPositions / wavelength}.
     */
    record Llama3(float factor, float lowFreqFactor, float highFreqFactor, int originalMaxPositions)
            implements RopeScaling
    {
        public Llama3
        {
            if (!(factor >= 1) || !(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor) || originalMaxPositions < 1
                    || Float.isInfinite(factor) || Float.isInfinite(highFreqFactor)) {
                throw new IllegalArgumentException("llama3 rope scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and a positive "
                        + "original_max_position_embeddings; was factor " + factor + ", low_freq_factor " + lowFreqFactor
                        + ", high_freq_factor " + highFreqFactor + ", original_max_position_embeddings " + originalMaxPositions);
            }
        }

        @Override
        public double remap(double inverseFrequency)
        {
            double wavelength = 2 * Math.PI / inverseFrequency;
            if (wavelength < originalMaxPositions / (double) highFreqFactor) {
                return inverseFrequency;
            }
            if (wavelength > originalMaxPositions / (double) lowFreqFactor) {
                return inverseFrequency / factor;
            }
            double smooth = (originalMaxPositions / wavelength - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
            return (1 - smooth) * inverseFrequency / factor + smooth * inverseFrequency;
        }

        @Override
        public String canonical()
        {
            return "llama3:" + Float.floatToIntBits(factor) + ":" + Float.floatToIntBits(lowFreqFactor) + ":"
                    + Float.floatToIntBits(highFreqFactor) + ":" + originalMaxPositions;
        }
    }
}
