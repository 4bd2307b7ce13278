package io.handoff.core.model;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class YarnRopeScalingTest
{
    // dim 8, theta 10^4, original context 64: beta_fast 32 turns at pair -0.50 (floor, clamped: 0), beta_slow 1 at
    // pair 1.008 (ceil: 2), so the ramp is 0, 0.5, 1, 1 over the four pairs
    static final RopeScaling.Yarn YARN = new RopeScaling.Yarn(4f, 64, 32f, 1f, 1f, 0.5f);

    @Test
    void frequenciesAreExtrapolatedBelowTheRampInterpolatedAboveAndBlendedOnIt()
    {
        double[] expected = {1.0, 0.1 * (0.5 / 4 + 0.5), 0.01 / 4, 0.001 / 4};
        for (int i = 0; i < 4; i++) {
            double inverse = 1.0 / Math.pow(10000, 2.0 * i / 8);
            assertThat(YARN.remap(i, 8, 10000, inverse)).as("pair " + i).isCloseTo(expected[i], within(1e-15));
        }
    }

    @Test
    void tablesCarryTheAttentionFactorAndTheSoftmaxMultiplierIsMscaleAllDimSquared()
    {
        double attention = (0.1 * 1.0 * Math.log(4) + 1) / (0.1 * 0.5 * Math.log(4) + 1);
        assertThat(YARN.attentionFactor()).isCloseTo(attention, within(1e-15));
        assertThat(YARN.softmaxScaleMultiplier()).isCloseTo(Math.pow(0.05 * Math.log(4) + 1, 2), within(1e-15));

        float[][] tables = Kernels.ropeTables(5, 8, 10000, YARN);
        int pos = 3;
        int pair = 1;
        assertThat((double) tables[0][pos * 4 + pair]).isCloseTo(Math.cos(pos * 0.0625) * attention, within(1e-6));
        assertThat((double) tables[1][pos * 4 + pair]).isCloseTo(Math.sin(pos * 0.0625) * attention, within(1e-6));
        assertThat((double) tables[1][pos * 4 + 3]).isCloseTo(Math.sin(pos * 0.00025) * attention, within(1e-6));
    }

    @Test
    void mscaleIsOneUpToFactorOneAndLogarithmicAbove()
    {
        assertThat(RopeScaling.Yarn.mscale(1, 0.707)).isEqualTo(1.0);
        assertThat(RopeScaling.Yarn.mscale(0.5, 0.707)).isEqualTo(1.0);
        assertThat(RopeScaling.Yarn.mscale(40, 0.707)).isCloseTo(0.1 * 0.707 * Math.log(40) + 1, within(1e-15));
    }

    @Test
    void factorOneBuildsTheUnscaledTablesBitForBit()
    {
        RopeScaling.Yarn identity = new RopeScaling.Yarn(1f, 64, 32f, 1f, 0.707f, 0.707f);
        float[][] scaled = Kernels.ropeTables(70, 16, 10000, identity);
        float[][] plain = Kernels.ropeTables(70, 16, 10000, RopeScaling.NONE);
        assertThat(scaled[0]).isEqualTo(plain[0]);
        assertThat(scaled[1]).isEqualTo(plain[1]);
        assertThat(identity.softmaxScaleMultiplier()).isEqualTo(1.0);
    }

    @Test
    void theCanonicalTextNamesEveryParameter()
    {
        assertThat(YARN.canonical()).startsWith("yarn:").isNotEqualTo(new RopeScaling.Yarn(4f, 64, 32f, 1f, 1f, 1f).canonical())
                .isNotEqualTo(new RopeScaling.Yarn(4f, 128, 32f, 1f, 1f, 0.5f).canonical())
                .isEqualTo(new RopeScaling.Yarn(4f, 64, 32f, 1f, 1f, 0.5f).canonical());
    }

    @Test
    void invalidParametersAreRefusedNamingTheKey()
    {
        assertThatThrownBy(() -> new RopeScaling.Yarn(0.5f, 64, 32f, 1f, 1f, 1f)).hasMessageContaining("factor").hasMessageContaining("0.5");
        assertThatThrownBy(() -> new RopeScaling.Yarn(4f, 0, 32f, 1f, 1f, 1f)).hasMessageContaining("original_max_position_embeddings");
        assertThatThrownBy(() -> new RopeScaling.Yarn(4f, 64, 1f, 1f, 1f, 1f)).hasMessageContaining("beta_fast");
        assertThatThrownBy(() -> new RopeScaling.Yarn(4f, 64, 1f, 2f, 1f, 1f)).hasMessageContaining("beta_slow < beta_fast");
    }
}
