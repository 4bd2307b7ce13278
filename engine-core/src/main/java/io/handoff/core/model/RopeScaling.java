package io.handoff.core.model;

import java.util.List;

/**
 * How a model remaps RoPE's inverse frequencies for a longer context than it was trained on.
 * {@link #NONE} leaves them as {@code theta^(-2i/dim)}; {@link Llama3} is Llama 3.1's remapping as Transformers
 * configures it, {@link FrequencyDivisors} the same written out per frequency as llama.cpp stores it in GGUF.
 */
public sealed interface RopeScaling
{
    RopeScaling NONE = new None();

    /** The inverse frequency the tables use for pair {@code i} instead of {@code inverseFrequency}. */
    double remap(int i, double inverseFrequency);

    /** A stable text for {@link ModelConfig#compatibilityHash()}. */
    String canonical();

    record None()
            implements RopeScaling
    {
        @Override
        public double remap(int i, double inverseFrequency)
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
        public double remap(int i, double inverseFrequency)
        {
            return remap(inverseFrequency);
        }

        /** The remapping of one inverse frequency, whatever its index. */
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

    /**
     * llama.cpp's {@code rope_freqs.weight}: pair {@code i} turns at {@code inverseFrequency / divisors[i]} (its converter
     * writes Llama 3.1's llama3 scaling this way).
     */
    record FrequencyDivisors(List<Float> divisors)
            implements RopeScaling
    {
        public FrequencyDivisors
        {
            divisors = List.copyOf(divisors);
            if (divisors.isEmpty() || divisors.stream().anyMatch(d -> !(d > 0) || d.isInfinite())) {
                throw new IllegalArgumentException("RoPE frequency divisors must be positive and finite, were " + divisors);
            }
        }

        @Override
        public double remap(int i, double inverseFrequency)
        {
            return inverseFrequency / divisors.get(i);
        }

        @Override
        public String canonical()
        {
            StringBuilder text = new StringBuilder("divisors");
            divisors.forEach(d -> text.append(':').append(Float.floatToIntBits(d)));
            return text.toString();
        }
    }
}
