package io.handoff.core.parallel;

import io.handoff.core.model.ForwardBatch;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A step as the leader sends it to the other ranks: the {@link ForwardBatch} (its token ids, positions, slots and
 * attention metadata) and the rows whose logits it asks for. Decoding checks every array's length against what is
 * left of the frame before allocating, every slot against the rank's pool, and rebuilds the batch through its
 * constructor, which checks that the metadata agrees with the tokens.
 */
final class StepCodec
{
    private static final int ARRAYS = 14;

    private StepCodec() {}

    record Step(ForwardBatch batch, int[] logitRows) {}

    static int size(ForwardBatch batch, int[] logitRows)
    {
        int ints = ARRAYS;
        for (int[] array : arrays(batch, logitRows)) {
            ints += array.length;
        }
        return 4 * ints;
    }

    static void write(ForwardBatch batch, int[] logitRows, ByteBuffer out)
    {
        for (int[] array : arrays(batch, logitRows)) {
            out.putInt(array.length);
            out.asIntBuffer().put(array);
            out.position(out.position() + 4 * array.length);
        }
    }

    /**
     * @param slots the slots a step may name: this rank's pool's, or on a data-parallel server every rank's (a rank uses
     *         its own requests' only)
     * @param ranks the group's ranks: a request's owner is one of them
     */
    static Step read(ByteBuffer in, int slots, int ranks)
            throws IOException
    {
        int[][] a = new int[ARRAYS][];
        for (int i = 0; i < ARRAYS; i++) {
            if (in.remaining() < 4) {
                throw new IOException("a step plan ends after " + i + " of its " + ARRAYS + " arrays");
            }
            int length = in.getInt();
            if (length < 0 || length > in.remaining() / 4) {
                throw new IOException("a step plan's array " + i + " claims " + length + " values; " + in.remaining() / 4 + " are left");
            }
            a[i] = new int[length];
            in.asIntBuffer().get(a[i]);
            in.position(in.position() + 4 * length);
        }
        if (in.hasRemaining()) {
            throw new IOException("a step plan has " + in.remaining() + " bytes after its arrays");
        }
        for (int i : new int[] {2, 5, 9}) {
            for (int slot : a[i]) {
                if (slot < 0 || slot >= slots) {
                    throw new IOException("a step plan names KV slot " + slot + "; this rank's pool has " + slots);
                }
            }
        }
        for (int owner : a[13]) {
            if (owner < 0 || owner >= ranks) {
                throw new IOException("a step plan gives a request to rank " + owner + " of " + ranks);
            }
        }
        try {
            ForwardBatch batch = new ForwardBatch(a[0], a[1], a[2], new ExtendMetadata(a[3], a[4], a[5], a[6], a[7]),
                    new DecodeMetadata(a[8], a[9], a[10], a[11]), a[13]);
            for (int row : a[12]) {
                if (row < 0 || row >= batch.size()) {
                    throw new IOException("a step plan asks for the logits of row " + row + " of " + batch.size());
                }
            }
            return new Step(batch, a[12]);
        }
        catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            throw new IOException("a step plan is inconsistent: " + e.getMessage(), e);
        }
    }

    private static int[][] arrays(ForwardBatch b, int[] logitRows)
    {
        ExtendMetadata e = b.extend();
        DecodeMetadata d = b.decode();
        return new int[][] {b.tokens(), b.positions(), b.slots(), e.qoIndptr(), e.kvIndptr(), e.kvIndices(), e.prefixLens(), e.seqLens(),
                d.kvIndptr(), d.kvIndices(), d.seqLens(), d.numKvSplits(), logitRows, b.owners()};
    }
}
