package io.handoff.core.model;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * FP8 E4M3 weights (one byte each, row-major) in blocks of {@code blockRows x blockCols} elements, each block with an F32
 * scale: DeepSeek-V3's {@code weight} and {@code weight_scale_inv}. Element {@code (r, c)}'s value is the F32 product
 * {@code e4m3(byte) * scale(r / blockRows, c / blockCols)}, rounded once (the FP8 value has 4 significant bits, the
 * product up to 28). A product decodes and scales in its lanes and then multiplies-adds in {@link Kernels#dot}'s order,
 * which a block width that is a power of two from {@link #STEP} up keeps under one scale per step; so it gives bit for bit what
 * the F32 matrix of those values gives. NaN codes ({@code 0x7F}, {@code 0xFF}) are refused when the matrix is made.
 */
final class Fp8BlockMatrix
        implements WeightMatrix
{
    /** The elements one iteration of {@link Kernels#dot}'s main loop reads: a block's width is a power of two from it up. */
    static final int STEP = 32;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
    private static final VectorSpecies<Byte> SCAN = ByteVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** A code shifted left by 20 (sign-extended from its byte): F32's sign bit, and exponent and mantissa bits the code fills. */
    private static final int FIELDS = 0x87f00000;
    /** E4M3's exponent bias is 7, F32's 127: a code in F32's fields reads as its value times 2^-120. */
    static final float REBIAS = 0x1p120f;
    /** The largest scale whose product with {@link #REBIAS} is finite, with a margin. */
    static final float MAX_SCALE = 0x1p7f;
    private static final float[] E4M3 = e4m3Table();

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final float[] scales;
    /** {@code scales} times {@link #REBIAS}, each exactly. */
    private final float[] lanesScales;
    private final int blockRows;
    /** log2 of {@code blockCols}: a shift finds a column's block (a division per step measured markedly slower). */
    private final int blockShift;
    private final int scaleCols;

    /**
     * The caller has checked the shapes, that {@code blockCols} is a power of two of at least {@link #STEP}, that {@code data}
     * holds no NaN code and that every scale is finite and below
     * {@link #MAX_SCALE} in magnitude; {@code scales} is not copied.
     */
    Fp8BlockMatrix(MemorySegment data, int rows, int cols, float[] scales, int blockRows, int blockCols)
    {
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.scales = scales;
        this.lanesScales = new float[scales.length];
        for (int i = 0; i < scales.length; i++) {
            lanesScales[i] = scales[i] * REBIAS;
        }
        this.blockRows = blockRows;
        this.blockShift = Integer.numberOfTrailingZeros(blockCols);
        this.scaleCols = Math.ceilDiv(cols, blockCols);
    }

    /** The value of E4M3 code {@code code} (sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinities, NaN at S.1111.111). */
    static float e4m3(byte code)
    {
        return E4M3[code & 0xff];
    }

    private static float[] e4m3Table()
    {
        float[] table = new float[256];
        for (int code = 0; code < 256; code++) {
            int exponent = (code >>> 3) & 0xf;
            int mantissa = code & 7;
            float magnitude = exponent == 0 ? Math.scalb((float) mantissa, -9) : Math.scalb((float) (8 + mantissa), exponent - 10);
            table[code] = (code & 0x7f) == 0x7f ? Float.NaN : (code & 0x80) != 0 ? -magnitude : magnitude;
        }
        return table;
    }

    /** The offset of the first NaN code in {@code data}, or -1. */
    static long firstNan(MemorySegment data)
    {
        long n = data.byteSize();
        long i = 0;
        for (long upper = n - n % SCAN.length(); i < upper; i += SCAN.length()) {
            if (ByteVector.fromMemorySegment(SCAN, data, i, LE).and((byte) 0x7f).eq((byte) 0x7f).anyTrue()) {
                break;
            }
        }
        for (; i < n; i++) {
            if ((data.get(ValueLayout.JAVA_BYTE, i) & 0x7f) == 0x7f) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Eight codes at {@code at} times their block's scale. Each code's sign, exponent and mantissa move into F32's fields
     * unchanged, which reads as the code's value times 2^-120 (a subnormal code as an F32 subnormal), and the product with
     * {@code scale * 2^120} is the code's value times the scale, rounded once, exactly as the scalar {@code e4m3(code) * scale}.
     * Four operations beside the load; the price is that a subnormal code is an F32 subnormal operand, which some CPUs
     * multiply slowly (uniformly random codes, 5% of them subnormal, measured about half as fast), but a quantized
     * weight's code is subnormal only below its block's largest weight / 28672, about one weight in ten thousand.
     */
    private static FloatVector lanes(MemorySegment data, long at, FloatVector lanesScale)
    {
        IntVector code = (IntVector) ByteVector.fromMemorySegment(B, data, at, LE).convertShape(VectorOperators.B2I, I, 0);
        return code.lanewise(VectorOperators.LSHL, 20).and(FIELDS).reinterpretAsFloats().mul(lanesScale);
    }

    @Override
    public float dot(int row, float[] x, int xOff, float[] scratch)
    {
        long base = (long) row * cols;
        int scaleRow = row / blockRows * scaleCols;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        int i = 0;
        // one loop with the block looked up per step: a nested loop over each block's four steps measured slower
        for (int upper = cols - cols % STEP; i < upper; i += STEP) {
            FloatVector s = FloatVector.broadcast(F, lanesScales[scaleRow + (i >>> blockShift)]);
            acc0 = lanes(data, base + i, s).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = lanes(data, base + i + L, s).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = lanes(data, base + i + 2 * L, s).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = lanes(data, base + i + 3 * L, s).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        // what is left lies in the row's last block
        float last = i < cols ? scales[scaleRow + (i >>> blockShift)] : 0f;
        FloatVector s = FloatVector.broadcast(F, last * REBIAS);
        for (int upper = cols - cols % L; i < upper; i += L) {
            acc0 = lanes(data, base + i, s).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
        }
        // Kernels.dot's lane tree
        FloatVector acc = acc0.add(acc1).add(acc2.add(acc3));
        float sum = ((acc.lane(0) + acc.lane(1)) + (acc.lane(2) + acc.lane(3))) + ((acc.lane(4) + acc.lane(5)) + (acc.lane(6) + acc.lane(7)));
        for (; i < cols; i++) {
            sum = Math.fma(e4m3(data.get(ValueLayout.JAVA_BYTE, base + i)) * last, x[xOff + i], sum);
        }
        return sum;
    }

    @Override
    public void readRow(int row, float[] out, int outOff)
    {
        long base = (long) row * cols;
        int scaleRow = row / blockRows * scaleCols;
        int i = 0;
        for (int upper = cols - cols % STEP; i < upper; i += STEP) {
            FloatVector s = FloatVector.broadcast(F, lanesScales[scaleRow + (i >>> blockShift)]);
            lanes(data, base + i, s).intoArray(out, outOff + i);
            lanes(data, base + i + L, s).intoArray(out, outOff + i + L);
            lanes(data, base + i + 2 * L, s).intoArray(out, outOff + i + 2 * L);
            lanes(data, base + i + 3 * L, s).intoArray(out, outOff + i + 3 * L);
        }
        float last = i < cols ? scales[scaleRow + (i >>> blockShift)] : 0f;
        FloatVector s = FloatVector.broadcast(F, last * REBIAS);
        for (int upper = cols - cols % L; i < upper; i += L) {
            lanes(data, base + i, s).intoArray(out, outOff + i);
        }
        for (; i < cols; i++) {
            out[outOff + i] = e4m3(data.get(ValueLayout.JAVA_BYTE, base + i)) * last;
        }
    }

    @Override
    public int rows()
    {
        return rows;
    }

    @Override
    public int cols()
    {
        return cols;
    }

    @Override
    public String elementType()
    {
        return "F8_E4M3";
    }

    @Override
    public long byteSize()
    {
        return data.byteSize() + 4L * scales.length;
    }
}
