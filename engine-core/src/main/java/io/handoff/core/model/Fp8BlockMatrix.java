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
 * which a block width that is a multiple of {@link #STEP} keeps under one scale per step; so it gives bit for bit what
 * the F32 matrix of those values gives. NaN codes ({@code 0x7F}, {@code 0xFF}) are refused when the matrix is made.
 */
final class Fp8BlockMatrix
        implements WeightMatrix
{
    /** The elements one iteration of {@link Kernels#dot}'s main loop reads: a block's width must be a multiple of it. */
    static final int STEP = 32;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_64;
    private static final VectorSpecies<Byte> SCAN = ByteVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** E4M3's exponent bias is 7, F32's 127: a normal code's exponent field moves up by 120. */
    private static final int REBIAS = 120 << 23;
    /** A subnormal code {@code 0.mmm x 2^-6} is {@code mmm x 2^-9}. */
    private static final float SUBNORMAL_UNIT = 0x1p-9f;
    private static final float[] E4M3 = e4m3Table();

    private final MemorySegment data;
    private final int rows;
    private final int cols;
    private final float[] scales;
    private final int blockRows;
    private final int blockCols;
    private final int scaleCols;

    /** The caller has checked the shapes and that {@code data} holds no NaN code; {@code scales} is not copied. */
    Fp8BlockMatrix(MemorySegment data, int rows, int cols, float[] scales, int blockRows, int blockCols)
    {
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.scales = scales;
        this.blockRows = blockRows;
        this.blockCols = blockCols;
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
     * Eight codes at {@code at}, decoded and times {@code scale}. A normal code's exponent and mantissa move into F32's fields
     * and its exponent is rebiased; a subnormal's mantissa is converted and scaled; the sign is the byte's, sign-extended.
     */
    private static FloatVector lanes(MemorySegment data, long at, FloatVector scale)
    {
        IntVector code = (IntVector) ByteVector.fromMemorySegment(B, data, at, LE).convertShape(VectorOperators.B2I, I, 0);
        IntVector magnitude = code.and(0x7f);
        FloatVector normal = magnitude.lanewise(VectorOperators.LSHL, 20).add(REBIAS).reinterpretAsFloats();
        FloatVector subnormal = ((FloatVector) magnitude.convert(VectorOperators.I2F, 0)).mul(SUBNORMAL_UNIT);
        FloatVector unsigned = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, 8).cast(F));
        return unsigned.reinterpretAsInts().or(code.and(Integer.MIN_VALUE)).reinterpretAsFloats().mul(scale);
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
        int upper = cols - cols % (4 * L);
        for (int block = scaleRow; i < upper; block++) {
            FloatVector s = FloatVector.broadcast(F, scales[block]);
            for (int end = Math.min(upper, i + blockCols); i < end; i += 4 * L) {
                acc0 = lanes(data, base + i, s).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
                acc1 = lanes(data, base + i + L, s).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
                acc2 = lanes(data, base + i + 2 * L, s).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
                acc3 = lanes(data, base + i + 3 * L, s).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
            }
        }
        // what is left lies in the row's last block
        float last = i < cols ? scales[scaleRow + i / blockCols] : 0f;
        FloatVector s = FloatVector.broadcast(F, last);
        for (int upper8 = cols - cols % L; i < upper8; i += L) {
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
        int upper = cols - cols % L;
        for (int block = scaleRow; i < upper; block++) {
            FloatVector s = FloatVector.broadcast(F, scales[block]);
            for (int end = Math.min(upper, i + blockCols); i < end; i += L) {
                lanes(data, base + i, s).intoArray(out, outOff + i);
            }
        }
        if (i < cols) {
            float last = scales[scaleRow + i / blockCols];
            for (; i < cols; i++) {
                out[outOff + i] = e4m3(data.get(ValueLayout.JAVA_BYTE, base + i)) * last;
            }
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
