package io.handoff.core.model.gguf;

/**
 * Undoes the row order llama.cpp's converter gives Llama's q and k projections. It wrote, in NumPy,
 * {@code w.reshape(n_head, 2, rows / n_head / 2, cols).swapaxes(1, 2).reshape(rows, cols)}: within each
 * head, Transformers' two halves {@code [x0..x(h-1) | y0..y(h-1)]} become the interleaved pairs
 * {@code [x0 y0 x1 y1 …]}. So GGUF row {@code head*2h + j*2 + i} is Transformers' row
 * {@code head*2h + i*h + j}, for half-width {@code h}, {@code i} in {0, 1}, {@code j} below {@code h}.
 */
final class LlamaQkPermutation
{
    private LlamaQkPermutation() {}

    /** For each Transformers-order row of a {@code rows}-row matrix over {@code heads} heads, the GGUF row that holds it. */
    static int[] ggufRows(int rows, int heads)
    {
        if (heads < 1 || rows % (2 * heads) != 0) {
            throw new IllegalArgumentException("cannot undo llama.cpp's q/k row permutation of " + rows + " rows over " + heads
                    + " heads: rows must be a multiple of 2 * heads");
        }
        int half = rows / heads / 2;
        int[] gguf = new int[rows];
        for (int head = 0; head < heads; head++) {
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < half; j++) {
                    gguf[head * 2 * half + i * half + j] = head * 2 * half + j * 2 + i;
                }
            }
        }
        return gguf;
    }

    /** The Transformers-order matrix of a GGUF-order {@code rows × cols} one, {@code heads} heads (kv heads for k). */
    static float[] unpermute(float[] gguf, int rows, int cols, int heads)
    {
        if ((long) rows * cols != gguf.length) {
            throw new IllegalArgumentException("cannot undo llama.cpp's q/k row permutation of a " + rows + " x " + cols
                    + " matrix from " + gguf.length + " values");
        }
        int[] from = ggufRows(rows, heads);
        float[] hf = new float[gguf.length];
        for (int row = 0; row < rows; row++) {
            System.arraycopy(gguf, from[row] * cols, hf, row * cols, cols);
        }
        return hf;
    }
}
