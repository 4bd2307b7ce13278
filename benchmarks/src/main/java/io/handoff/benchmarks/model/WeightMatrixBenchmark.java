package io.handoff.benchmarks.model;

import io.handoff.core.model.WeightMatrix;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * One token's product with a linear layer (decode's matvec, one thread), in microseconds, for the same shape stored as
 * BF16 and as DeepSeek-V3's FP8 E4M3 with 128 x 128 block scales: compare the two types within one run. The small shape
 * stays in the core's caches (the decoding's arithmetic counts); V3's dense {@code down_proj} (264 MB in BF16) streams
 * from memory, as every layer of a real model does (the bytes read count: FP8 reads half of BF16's). The FP8 codes are Gaussian weights quantized as DeepSeek's are (per block, scale =
 * amax / 448, codes rounded toward zero here), or uniformly random codes, 5% of them subnormal: an F32 subnormal operand in
 * the product, which some CPUs multiply slowly.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class WeightMatrixBenchmark
{
    @Param({"BF16", "F8_E4M3", "F8_E4M3_UNIFORM_CODES"})
    public String type;

    /** rows x cols ({@code [out, in]}): a cached 256 x 2048, and V3's dense down_proj, 7168 x 18432. */
    @Param({"256x2048", "7168x18432"})
    public String shape;

    private Arena arena;
    private WeightMatrix matrix;
    private float[] x;
    private float[] scratch;
    private float[] out;

    @Setup
    public void setUp()
    {
        int rows = Integer.parseInt(shape.substring(0, shape.indexOf('x')));
        int cols = Integer.parseInt(shape.substring(shape.indexOf('x') + 1));
        SplittableRandom random = new SplittableRandom(31);
        arena = Arena.ofShared();
        long n = (long) rows * cols;
        if (type.equals("BF16")) {
            MemorySegment data = arena.allocate(2 * n, 64);
            ValueLayout.OfShort u16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < n; i++) {
                data.set(u16, 2 * i, (short) (Float.floatToIntBits((float) random.nextDouble(-0.05, 0.05)) >>> 16));
            }
            matrix = WeightMatrix.bf16(data, rows, cols);
        }
        else if (type.equals("F8_E4M3")) {
            // two passes over the same seeded weights: each block's amax, then the codes
            int scaleCols = Math.ceilDiv(cols, 128);
            float[] scales = new float[Math.ceilDiv(rows, 128) * scaleCols];
            SplittableRandom weights = new SplittableRandom(37);
            for (long i = 0; i < n; i++) {
                int block = (int) (i / cols / 128 * scaleCols + i % cols / 128);
                scales[block] = Math.max(scales[block], (float) Math.abs(weights.nextGaussian() * 0.02) / 448);
            }
            weights = new SplittableRandom(37);
            MemorySegment data = arena.allocate(n, 64);
            for (long i = 0; i < n; i++) {
                int block = (int) (i / cols / 128 * scaleCols + i % cols / 128);
                data.set(ValueLayout.JAVA_BYTE, i, e4m3TowardZero((float) (weights.nextGaussian() * 0.02) / scales[block]));
            }
            matrix = WeightMatrix.fp8Blocks(data, rows, cols, scales, 128, 128);
        }
        else {
            MemorySegment data = arena.allocate(n, 64);
            for (long i = 0; i < n; i++) {
                int code = random.nextInt(256);
                data.set(ValueLayout.JAVA_BYTE, i, (byte) ((code & 0x7f) == 0x7f ? code ^ 1 : code));
            }
            float[] scales = new float[Math.ceilDiv(rows, 128) * Math.ceilDiv(cols, 128)];
            for (int i = 0; i < scales.length; i++) {
                scales[i] = (float) (random.nextDouble(0.01, 0.1) / 448);
            }
            matrix = WeightMatrix.fp8Blocks(data, rows, cols, scales, 128, 128);
        }
        x = new float[cols];
        for (int i = 0; i < cols; i++) {
            x[i] = (float) random.nextDouble(-1, 1);
        }
        scratch = new float[cols];
        out = new float[rows];
    }

    /** The E4M3 code of {@code v} (|v| at most 448), its mantissa cut to 3 bits. */
    private static byte e4m3TowardZero(float v)
    {
        float magnitude = Math.min(Math.abs(v), 448f);
        int code;
        if (magnitude < 0x1p-6f) {
            code = (int) (magnitude * 0x1p9f);
        }
        else {
            int exponent = Math.getExponent(magnitude);
            int mantissa = (Float.floatToRawIntBits(magnitude) >>> 20) & 7;
            code = (exponent + 7) << 3 | mantissa;
        }
        return (byte) (v < 0 ? code | 0x80 : code);
    }

    @TearDown
    public void tearDown()
    {
        arena.close();
    }

    @Benchmark
    public float[] matvec()
    {
        for (int r = 0; r < out.length; r++) {
            out[r] = matrix.dot(r, x, 0, scratch);
        }
        return out;
    }
}
