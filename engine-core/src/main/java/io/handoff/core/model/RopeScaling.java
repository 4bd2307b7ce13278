package io.handoff.core.model;

import java.util.List;

/**
 * How a model remaps RoPE's inverse frequencies for a longer context than it was trained on.
 * {@link #NONE} leaves them as {@code theta^(-2i/dim)}; {@link Llama3} is Llama 3.1's remapping as Transformers
 * configures it, {@link FrequencyDivisors} the same written out per frequency as llama.cpp stores it in GGUF;
 * {@link Yarn} is DeepSeek-V2/V3's YaRN.
 */
public sealed interface RopeScaling
{
    RopeScaling NONE = new None();

    /**
     * The inverse frequency the tables use for pair {@code i} of a rotary part {@code dim} wide turning at base
     * {@code theta}, instead of {@code inverseFrequency}; only a remapping whose ramp is placed by the rotary geometry
     * ({@link Yarn}) reads {@code dim} and {@code theta}.
     */
    double remap(int i, int dim, double theta, double inverseFrequency);

    /** The factor the cos and sin tables are multiplied by; 1 leaves them as they are. */
    default double attentionFactor()
    {
        return 1;
    }

    /** A stable text for {@link ModelConfig#compatibilityHash()}. */
    String canonical();

    record None()
            implements RopeScaling
    {
        @Override
        public double remap(int i, int dim, double theta, double inverseFrequency)
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
        public double remap(int i, int dim, double theta, double inverseFrequency)
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
        public double remap(int i, int dim, double theta, double inverseFrequency)
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

    /**
     * YaRN as DeepSeek-V2/V3 configure it ({@code rope_type: yarn}). Pairs that turn more than {@code betaFast} times
     * over {@code originalMaxPositions} keep their frequency (extrapolated), pairs that turn fewer than {@code betaSlow}
     * times are divided by {@code factor} (interpolated), and the pairs between are blended along a linear ramp in the
     * pair index. The tables are scaled by {@code mscale(factor, mscale) / mscale(factor, mscaleAllDim)}, and MLA's
     * softmax scale by {@link #softmaxScaleMultiplier()}.
     */
    record Yarn(float factor, int originalMaxPositions, float betaFast, float betaSlow, float mscale, float mscaleAllDim)
            implements RopeScaling
    {
        public static final float DEFAULT_BETA_FAST = 32f;
        public static final float DEFAULT_BETA_SLOW = 1f;

        public Yarn
        {
            if (!(factor >= 1) || Float.isInfinite(factor)) {
                throw new IllegalArgumentException("yarn rope scaling: factor must be finite and at least 1, was " + factor);
            }
            if (originalMaxPositions < 1) {
                throw new IllegalArgumentException("yarn rope scaling: original_max_position_embeddings must be positive, was "
                        + originalMaxPositions);
            }
            if (!(betaSlow > 0) || !(betaFast > betaSlow) || Float.isInfinite(betaFast)) {
                throw new IllegalArgumentException("yarn rope scaling needs 0 < beta_slow < beta_fast, finite; was beta_fast " + betaFast
                        + ", beta_slow " + betaSlow);
            }
            if (!Float.isFinite(mscale) || !Float.isFinite(mscaleAllDim)) {
                throw new IllegalArgumentException("yarn rope scaling: mscale and mscale_all_dim must be finite, were " + mscale + " and "
                        + mscaleAllDim);
            }
        }

        /** DeepSeek's {@code yarn_get_mscale}: {@code 0.1 * m * ln(s) + 1}, or 1 when {@code s <= 1}. */
        public static double mscale(double s, double m)
        {
            return s <= 1 ? 1 : 0.1 * m * StrictMath.log(s) + 1;
        }

        @Override
        public double remap(int i, int dim, double theta, double inverseFrequency)
        {
            if (factor == 1) {
                return inverseFrequency; // exactly no scaling: the blend below could round a last bit
            }
            double low = Math.max(Math.floor(correctionDim(betaFast, dim, theta)), 0);
            double high = Math.min(Math.ceil(correctionDim(betaSlow, dim, theta)), dim - 1);
            if (low == high) {
                high += 0.001; // DeepSeek's guard against a zero-width ramp
            }
            double ramp = Math.clamp((i - low) / (high - low), 0.0, 1.0);
            return inverseFrequency / factor * ramp + inverseFrequency * (1 - ramp);
        }

        /** The pair index whose frequency turns {@code rotations} times over the original context. */
        private double correctionDim(double rotations, int dim, double theta)
        {
            return dim * StrictMath.log(originalMaxPositions / (rotations * 2 * Math.PI)) / (2 * StrictMath.log(theta));
        }

        @Override
        public double attentionFactor()
        {
            return mscale(factor, mscale) / mscale(factor, mscaleAllDim);
        }

        /** What MLA multiplies {@code 1/sqrt(qk_nope + qk_rope)} by: {@code mscale(factor, mscaleAllDim)^2}. */
        public double softmaxScaleMultiplier()
        {
            double m = mscale(factor, mscaleAllDim);
            return m * m;
        }

        @Override
        public String canonical()
        {
            return "yarn:" + Float.floatToIntBits(factor) + ":" + originalMaxPositions + ":" + Float.floatToIntBits(betaFast) + ":"
                    + Float.floatToIntBits(betaSlow) + ":" + Float.floatToIntBits(mscale) + ":" + Float.floatToIntBits(mscaleAllDim);
        }
    }
}
