package io.handoff.math;

import jdk.incubator.vector.DoubleVector;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ExactExpTest
{
    /** The exps come from ExactExp's vector lanes, not its cold-start scalar path: wait until they are compiled. */
    @BeforeAll
    static void lanesWarm()
            throws InterruptedException
    {
        assertThat(ExactExp.awaitWarm(300_000)).as("ExactExp warmed up").isTrue();
    }

    private static final int LANES = ExactExp.DOUBLES.length();

    /** Every float whose bits are a multiple of the stride, as the softmax passes them (a float difference widened). */
    @Test
    void everyStridedFloatGivesStrictMathBits()
    {
        int stride = 251;
        int count = (int) ((1L << 32) / stride) + 1;
        float[] xs = new float[count];
        for (int i = 0; i < count; i++) {
            xs[i] = Float.intBitsToFloat((int) ((long) i * stride));
        }
        assertFloatsExact(xs);
    }

    /** A seeded sample of the softmax's own range: scores minus their max, from 0 down to where a float exp is 0. */
    @Test
    void seededSoftmaxRangeGivesStrictMathBits()
    {
        SplittableRandom random = new SplittableRandom(13);
        float[] xs = new float[1_500_000];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = (float) -random.nextDouble(0, i % 2 == 0 ? 2 : 120);
        }
        assertFloatsExact(xs);
        float[] anyFloat = new float[1_000_000];
        for (int i = 0; i < anyFloat.length; i++) {
            anyFloat[i] = Float.intBitsToFloat(random.nextInt());
        }
        assertFloatsExact(anyFloat);
    }

    /** fdlibm's branch boundaries, the points where k changes, and special values, each with its neighbours. */
    @Test
    void branchBoundariesAndSpecialValuesGiveStrictMathBits()
    {
        List<Double> centres = new ArrayList<>(List.of(
                0.0, Double.MIN_VALUE, Double.MIN_NORMAL, 0x1p-28, 0x1p-54, 0.5 * Math.log(2), 1.5 * Math.log(2),
                Double.longBitsToDouble(0x3fd6_2e42_ffff_ffffL), Double.longBitsToDouble(0x3fd6_2e43_0000_0000L),
                Double.longBitsToDouble(0x3ff0_a2b1_ffff_ffffL), Double.longBitsToDouble(0x3ff0_a2b2_0000_0000L),
                Double.longBitsToDouble(0x3e2f_ffff_ffff_ffffL), Double.longBitsToDouble(0x3e30_0000_0000_0000L),
                ExactExp.COMMON_LIMIT, 7.09782712893383973096e+02, 7.45133219101941108420e+02,
                Double.longBitsToDouble(0x4086_2e42_0000_0000L), 1021 * Math.log(2), 1022 * Math.log(2), 1074 * Math.log(2),
                1.0, 88.72283905206835, 103.97207708399179, Double.MAX_VALUE));
        for (int k = 1; k <= 1024; k++) {
            centres.add((k - 0.5) * Math.log(2));
        }
        List<Double> xs = new ArrayList<>();
        for (double centre : centres) {
            for (double sign : new double[] {1, -1}) {
                double x = sign * centre;
                for (int step = 0; step < 40; step++) {
                    xs.add(x);
                    x = Math.nextUp(x);
                }
                x = sign * centre;
                for (int step = 0; step < 40; step++) {
                    x = Math.nextDown(x);
                    xs.add(x);
                }
            }
        }
        xs.addAll(List.of(-0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN,
                Double.longBitsToDouble(0x7ff0_0000_0000_0001L), Double.longBitsToDouble(0xfff8_0000_0000_1234L),
                -Double.MAX_VALUE, -Double.MIN_VALUE));
        assertDoublesExact(xs.stream().mapToDouble(Double::doubleValue).toArray());
    }

    @Test
    void rareLanesAmongCommonOnesAreEachExact()
    {
        double[] specials = {Double.NaN, 800, -800, -708.9, 709.5, Double.NEGATIVE_INFINITY, 1e-30, -0.0};
        for (double special : specials) {
            for (int lane = 0; lane < LANES; lane++) {
                double[] xs = new double[LANES];
                for (int i = 0; i < LANES; i++) {
                    xs[i] = i == lane ? special : -0.37 * (i + 1);
                }
                assertDoublesExact(xs);
            }
        }
    }

    @Test
    void expMinusTakesTheDifferenceInFloatAndWritesInPlace()
    {
        SplittableRandom random = new SplittableRandom(7);
        float[] scores = new float[3 * LANES + 5];
        for (int i = 0; i < scores.length; i++) {
            scores[i] = (float) random.nextDouble(-30, 30);
        }
        float shift = 29.123f;
        float[] expected = new float[scores.length];
        for (int i = 1; i < scores.length; i++) {
            expected[i] = (float) StrictMath.exp(scores[i] - shift);
        }
        expected[0] = scores[0];
        ExactExp.expMinus(scores, 1, shift, scores, 1, scores.length - 1);
        assertThat(scores).containsExactly(expected);
    }

    @Test
    void lanesOfAnotherSpeciesAreRefusedWithTheSpeciesToUse()
    {
        var other = ExactExp.DOUBLES.length() == 2 ? DoubleVector.SPECIES_256 : DoubleVector.SPECIES_128;
        assertThatThrownBy(() -> ExactExp.exp(DoubleVector.zero(other)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ExactExp.DOUBLES");
    }

    @Property(tries = 300, seed = "42")
    void randomDoublesGiveStrictMathBits(@ForAll("doubleLanes") double[] xs)
    {
        assertDoublesExact(xs);
    }

    @Provide
    Arbitrary<double[]> doubleLanes()
    {
        Arbitrary<Double> anyBits = Arbitraries.longs().map(Double::longBitsToDouble);
        Arbitrary<Double> likely = Arbitraries.doubles().between(-750, 750).withSpecialValue(Double.NaN)
                .withSpecialValue(Double.POSITIVE_INFINITY).withSpecialValue(Double.NEGATIVE_INFINITY).withSpecialValue(-0.0);
        return Arbitraries.oneOf(anyBits, likely).array(double[].class).ofMinSize(LANES).ofMaxSize(8 * LANES + 3);
    }

    private static void assertFloatsExact(float[] xs)
    {
        float[] got = new float[xs.length];
        ExactExp.expMinus(xs, 0, 0f, got, 0, xs.length);
        double[] widened = new double[xs.length];
        for (int i = 0; i < xs.length; i++) {
            widened[i] = xs[i];
        }
        double[] gotDouble = new double[xs.length];
        ExactExp.exp(widened, 0, gotDouble, 0, xs.length);
        for (int i = 0; i < xs.length; i++) {
            double expected = StrictMath.exp(xs[i]);
            if (Double.doubleToRawLongBits(gotDouble[i]) != Double.doubleToRawLongBits(expected)
                    || Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits((float) expected)) {
                throw new AssertionError("exp(" + xs[i] + " = 0x" + Integer.toHexString(Float.floatToRawIntBits(xs[i]))
                        + "): StrictMath " + expected + " (" + (float) expected + "), ExactExp " + gotDouble[i] + " (" + got[i] + ")");
            }
        }
    }

    private static void assertDoublesExact(double[] xs)
    {
        double[] got = new double[xs.length];
        ExactExp.exp(xs, 0, got, 0, xs.length);
        for (int i = 0; i < xs.length; i++) {
            double expected = StrictMath.exp(xs[i]);
            if (Double.doubleToRawLongBits(got[i]) != Double.doubleToRawLongBits(expected)) {
                throw new AssertionError("exp(" + xs[i] + " = 0x" + Long.toHexString(Double.doubleToRawLongBits(xs[i]))
                        + "): StrictMath " + expected + ", ExactExp " + got[i]);
            }
        }
    }
}
