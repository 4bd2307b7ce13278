package io.handoff.math;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code exp} over vector lanes that returns exactly {@link StrictMath#exp}'s bits for every input.
 *
 * <p>StrictMath.exp is fdlibm's algorithm: reduce {@code x = k ln2 + r} with a two-part {@code ln2}, approximate
 * {@code exp(r)} with a rational function of {@code r}, and scale by {@code 2^k} in the exponent bits. Java's
 * {@code + - * /} on doubles are correctly rounded and never fused, on vector lanes as on scalars, so doing the same
 * operations in the same order on each lane gives the same bits on every machine and at every lane width. Lanes where
 * fdlibm takes a rare branch (|x| at least {@value #COMMON_LIMIT}: overflow, underflow, subnormal results; NaN and
 * infinities) are recomputed by StrictMath.exp itself; fdlibm's tiny-argument branch ({@code 1 + x}) is a blend.
 *
 * <p>The attention plugins use it for softmax weights and the model for SwiGLU, so that the kernels' results stay the
 * bits they were with StrictMath.exp while the exponentials run a lane-width batch at a time.
 */
public final class ExactExp
{
    /** The double lanes {@link #exp(DoubleVector)} takes: the machine's preferred width (the bits do not depend on it). */
    public static final VectorSpecies<Double> DOUBLES = DoubleVector.SPECIES_PREFERRED;
    /** Float lanes of the same count as {@link #DOUBLES}, for widening float inputs. */
    public static final VectorSpecies<Float> FLOATS = VectorSpecies.of(float.class, VectorShape.forBitSize(DOUBLES.vectorBitSize() / 2));
    private static final VectorSpecies<Long> LONGS = VectorSpecies.of(long.class, DOUBLES.vectorShape());

    /** Below this magnitude fdlibm neither overflows nor underflows and its scale {@code k} stays within ±1021. */
    static final double COMMON_LIMIT = 707.0;

    /** Past this magnitude {@code (float) exp} is 0 or infinity: float's range ends near e^-103.98 and e^88.73. */
    static final float FLOAT_SATURATES = 200f;

    private static final double INV_LN2 = 0x1.71547652b82fep0;
    private static final double LN2_HI = 0x1.62e42feep-1;
    private static final double LN2_LO = 0x1.a39ef35793c76p-33;
    private static final double P1 = 0x1.555555555553ep-3;
    private static final double P2 = -0x1.6c16c16bebd93p-9;
    private static final double P3 = 0x1.1566aaf25de2cp-14;
    private static final double P4 = -0x1.bbd41c5d26bf1p-20;
    private static final double P5 = 0x1.6376972bea4d0p-25;
    private static final long ABS_MASK = 0x7fff_ffff_ffff_ffffL;
    /** fdlibm reduces when the high word of |x| is above 0x3fd62e42 (about 0.5 ln2). */
    private static final long REDUCE_FROM = 0x3fd6_2e43_0000_0000L;
    /** fdlibm returns {@code 1 + x} when the high word of |x| is below 0x3e300000 (2^-28). */
    private static final long TINY_BELOW = 0x3e30_0000_0000_0000L;

    /** Set once the lanes are compiled (see {@link #isWarm}); the array methods compute scalar exps until then. */
    private static volatile boolean warm;
    private static final Thread WARM_UP = Thread.ofPlatform().daemon().name("handoff-exact-exp-warm-up").unstarted(ExactExp::warmUp);

    static {
        WARM_UP.start();
    }

    private ExactExp() {}

    /**
     * Whether the vector lanes are ready. Vector API code is many times slower than scalar code until the JIT's
     * optimizing compiler has compiled it, so the first use of this class starts a daemon thread that runs the lanes
     * on scratch data until a round of them stops getting faster, and until then the array methods compute each exp
     * with StrictMath.exp itself: the same bits either way, so callers never see the switch except in speed. A caller
     * with a vector loop of its own (the model's SwiGLU) takes its scalar path while this is false.
     */
    public static boolean isWarm()
    {
        return warm;
    }

    /** Waits (at most {@code millis}) until {@link #isWarm}; tests of the lanes call it so that they test the lanes. */
    public static boolean awaitWarm(long millis)
            throws InterruptedException
    {
        WARM_UP.join(millis);
        return warm;
    }

    private static void warmUp()
    {
        float[] scores = new float[256];
        double[] doubles = new double[256];
        for (int i = 0; i < scores.length; i++) {
            scores[i] = -i * 0.37f;
            doubles[i] = i * 0.53 - 60;
        }
        float[] floatsOut = new float[scores.length];
        double[] doublesOut = new double[doubles.length];
        long best = Long.MAX_VALUE;
        int stalled = 0;
        // Rounds of 200 calls of each; warm once 5 rounds in a row are no faster than the best so far (at most 2,000
        // rounds: a JVM that never compiles them still gets the same bits from the lanes, only slower).
        for (int round = 0; round < 2_000 && stalled < 5; round++) {
            long start = System.nanoTime();
            for (int call = 0; call < 200; call++) {
                expMinusLanes(scores, 0, 0.5f, floatsOut, 0, scores.length);
                expLanes(doubles, 0, doublesOut, 0, doubles.length);
            }
            long took = System.nanoTime() - start;
            if (took < best * 0.95) {
                best = took;
                stalled = 0;
            }
            else {
                stalled++;
            }
        }
        warm = true;
    }

    /**
     * {@code out[outOffset + i] = (float) StrictMath.exp(x[xOffset + i] - shift)} for {@code i < length}, the
     * difference taken in float as a scalar {@code x[i] - shift} would be. {@code out} may be {@code x}.
     */
    public static void expMinus(float[] x, int xOffset, float shift, float[] out, int outOffset, int length)
    {
        if (!warm) {
            for (int i = 0; i < length; i++) {
                out[outOffset + i] = (float) StrictMath.exp(x[xOffset + i] - shift);
            }
            return;
        }
        expMinusLanes(x, xOffset, shift, out, outOffset, length);
    }

    static void expMinusLanes(float[] x, int xOffset, float shift, float[] out, int outOffset, int length)
    {
        FloatVector shiftLanes = FloatVector.broadcast(FLOATS, shift);
        int i = 0;
        for (int bound = FLOATS.loopBound(length); i < bound; i += FLOATS.length()) {
            // held within ±FLOAT_SATURATES: the float result there is already 0 or infinity, as it is for anything
            // farther out, and the lanes stay on the common path (a softmax's far keys would otherwise each take the rare
            // one, several times slower); NaN stays NaN
            FloatVector difference = FloatVector.fromArray(FLOATS, x, xOffset + i).sub(shiftLanes)
                    .max(-FLOAT_SATURATES).min(FLOAT_SATURATES);
            DoubleVector e = exp((DoubleVector) difference.convertShape(VectorOperators.F2D, DOUBLES, 0));
            ((FloatVector) e.convertShape(VectorOperators.D2F, FLOATS, 0)).intoArray(out, outOffset + i);
        }
        for (; i < length; i++) {
            out[outOffset + i] = (float) StrictMath.exp(x[xOffset + i] - shift);
        }
    }

    /** {@code out[outOffset + i] = StrictMath.exp(x[xOffset + i])} for {@code i < length}. {@code out} may be {@code x}. */
    public static void exp(double[] x, int xOffset, double[] out, int outOffset, int length)
    {
        if (!warm) {
            for (int i = 0; i < length; i++) {
                out[outOffset + i] = StrictMath.exp(x[xOffset + i]);
            }
            return;
        }
        expLanes(x, xOffset, out, outOffset, length);
    }

    static void expLanes(double[] x, int xOffset, double[] out, int outOffset, int length)
    {
        int i = 0;
        for (int bound = DOUBLES.loopBound(length); i < bound; i += DOUBLES.length()) {
            exp(DoubleVector.fromArray(DOUBLES, x, xOffset + i)).intoArray(out, outOffset + i);
        }
        for (; i < length; i++) {
            out[outOffset + i] = StrictMath.exp(x[xOffset + i]);
        }
    }

    /** {@code StrictMath.exp} of every lane of {@code x}, which must be of the species {@link #DOUBLES}. */
    public static DoubleVector exp(DoubleVector x)
    {
        if (x.species() != DOUBLES) {
            throw new IllegalArgumentException("ExactExp.exp takes lanes of " + DOUBLES + ", got " + x.species()
                    + "; load them with ExactExp.DOUBLES");
        }
        DoubleVector y = common(x);
        VectorMask<Double> rare = x.abs().compare(VectorOperators.LT, COMMON_LIMIT).not();
        return rare.anyTrue() ? withRareLanes(x, y, rare) : y;
    }

    /** fdlibm's exp for lanes with |x| below {@link #COMMON_LIMIT}; other lanes hold garbage. */
    private static DoubleVector common(DoubleVector x)
    {
        LongVector abs = ((LongVector) x.viewAsIntegralLanes()).and(ABS_MASK);
        VectorMask<Long> unreduced = abs.compare(VectorOperators.LT, REDUCE_FROM);
        VectorMask<Double> tiny = abs.compare(VectorOperators.LT, TINY_BELOW).cast(DOUBLES);
        // k = (int) (x / ln2 + copysign(0.5, x)), 0 where fdlibm does not reduce. fdlibm's separate case for |x| below
        // 1.5 ln2 (k = ±1, hi = x -/+ ln2_hi, lo = ±ln2_lo) is this same arithmetic with t = ±1, so it needs no lane of its own;
        // with k = 0 the reduction leaves x as it is and the k != 0 formula below equals fdlibm's k == 0 one.
        DoubleVector half = DoubleVector.broadcast(DOUBLES, 0.5).blend(-0.5, x.compare(VectorOperators.LT, 0.0));
        LongVector k = ((LongVector) x.mul(INV_LN2).add(half).convert(VectorOperators.D2L, 0)).blend(0L, unreduced);
        DoubleVector t = (DoubleVector) k.convert(VectorOperators.L2D, 0);
        DoubleVector hi = x.sub(t.mul(LN2_HI));
        DoubleVector lo = t.mul(LN2_LO);
        DoubleVector r = hi.sub(lo);
        DoubleVector rr = r.mul(r);
        DoubleVector poly = rr.mul(P5).add(P4).mul(rr).add(P3).mul(rr).add(P2).mul(rr).add(P1);
        DoubleVector c = r.sub(rr.mul(poly));
        DoubleVector two = DoubleVector.broadcast(DOUBLES, 2.0);
        DoubleVector y = DoubleVector.broadcast(DOUBLES, 1.0).sub(lo.sub(r.mul(c).div(two.sub(c))).sub(hi));
        // y * 2^k: k is within ±1021 here, so adding k to the exponent field is exact and stays normal.
        LongVector scaled = ((LongVector) y.viewAsIntegralLanes()).add(k.lanewise(VectorOperators.LSHL, 52));
        return ((DoubleVector) scaled.viewAsFloatingLanes()).blend(x.add(1.0), tiny);
    }

    private static DoubleVector withRareLanes(DoubleVector x, DoubleVector y, VectorMask<Double> rare)
    {
        double[] in = x.toArray();
        double[] out = y.toArray();
        for (int lane = 0; lane < in.length; lane++) {
            if (rare.laneIsSet(lane)) {
                out[lane] = StrictMath.exp(in[lane]);
            }
        }
        return DoubleVector.fromArray(DOUBLES, out, 0);
    }
}
