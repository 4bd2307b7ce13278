package io.handoff.core.model;

import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

import static java.util.Objects.requireNonNull;

/**
 * One forward step's input: the extend (prompt-chunk) tokens of every extend request, in request order,
 * followed by one token per decode request. Per token: its id, its absolute position and the KV slot its
 * K/V row is written to. The metadata says what attention reads; the constructor checks that every
 * token's position and slot agree with it, so a step cannot write one slot and read another.
 * Either part may be empty (a batch of 0 requests).
 */
public record ForwardBatch(int[] tokens, int[] positions, int[] slots, ExtendMetadata extend, DecodeMetadata decode, int[] owners)
{
    /** A batch every request of which is rank 0's (no data parallelism). */
    public ForwardBatch(int[] tokens, int[] positions, int[] slots, ExtendMetadata extend, DecodeMetadata decode)
    {
        this(tokens, positions, slots, extend, decode, new int[extend.batchSize() + decode.batchSize()]);
    }

    /**
     * @param owners per request (extend requests, then decode requests), the data-parallel rank whose pool holds its KV
     *         and which computes its attention; all 0 without data parallelism
     */
    public ForwardBatch
    {
        requireNonNull(owners, "owners is null");
        if (owners.length != extend.batchSize() + decode.batchSize()) {
            throw new IllegalArgumentException(owners.length + " owners for " + (extend.batchSize() + decode.batchSize()) + " requests");
        }
        for (int owner : owners) {
            if (owner < 0) {
                throw new IllegalArgumentException("request owner " + owner + " is negative");
            }
        }
        requireNonNull(tokens, "tokens is null");
        requireNonNull(positions, "positions is null");
        requireNonNull(slots, "slots is null");
        requireNonNull(extend, "extend is null");
        requireNonNull(decode, "decode is null");
        int extendTokens = extend.tokens();
        int count = extendTokens + decode.batchSize();
        if (tokens.length != count || positions.length != count || slots.length != count) {
            throw new IllegalArgumentException("batch has " + tokens.length + " tokens, " + positions.length + " positions and "
                    + slots.length + " slots; the metadata describes " + extendTokens + " extend + " + decode.batchSize() + " decode tokens");
        }
        for (int i = 0; i < extend.batchSize(); i++) {
            for (int row = extend.qoIndptr()[i]; row < extend.qoIndptr()[i + 1]; row++) {
                int position = extend.prefixLens()[i] + row - extend.qoIndptr()[i];
                checkToken(row, positions[row], slots[row], position, extend.kvIndices()[extend.kvIndptr()[i] + position]);
            }
        }
        for (int i = 0; i < decode.batchSize(); i++) {
            int position = decode.seqLens()[i] - 1;
            int row = extendTokens + i;
            checkToken(row, positions[row], slots[row], position, decode.kvIndices()[decode.kvIndptr()[i] + position]);
        }
    }

    /** This batch with each request's data-parallel rank. */
    public ForwardBatch withOwners(int[] requestOwners)
    {
        return new ForwardBatch(tokens, positions, slots, extend, decode, requestOwners.clone());
    }

    /**
     * The requests of data-parallel rank {@code rank} alone, with their slots moved by {@code -slotOffset} into that rank's
     * pool (its part of the pages starts at slot {@code slotOffset}); {@code rows} receives, per row of the result, its row
     * in this batch.
     */
    public ForwardBatch ownedBy(int rank, int slotOffset, int[][] rows)
    {
        Builder builder = builder();
        List<Integer> kept = new ArrayList<>();
        int e = extend.batchSize();
        for (int i = 0; i < e; i++) {
            if (owners[i] != rank) {
                continue;
            }
            int from = extend.qoIndptr()[i];
            int to = extend.qoIndptr()[i + 1];
            int[] row = local(extend.kvIndices(), extend.kvIndptr()[i], extend.seqLens()[i], slotOffset);
            builder.extend(Arrays.copyOfRange(tokens, from, to), extend.prefixLens()[i], row);
            for (int t = from; t < to; t++) {
                kept.add(t);
            }
        }
        // a request's num_kv_splits is a function of its seq_len alone: the step's own values, by seq_len
        Map<Integer, Integer> splits = new HashMap<>();
        for (int i = 0; i < decode.batchSize(); i++) {
            splits.put(decode.seqLens()[i], decode.numKvSplits()[i]);
            if (owners[e + i] != rank) {
                continue;
            }
            int t = extend.tokens() + i;
            builder.decode(tokens[t], positions[t], local(decode.kvIndices(), decode.kvIndptr()[i], decode.seqLens()[i], slotOffset));
            kept.add(t);
        }
        rows[0] = kept.stream().mapToInt(Integer::intValue).toArray();
        return builder.build(splits::get);
    }

    private static int[] local(int[] indices, int from, int length, int slotOffset)
    {
        int[] row = new int[length];
        for (int j = 0; j < length; j++) {
            row[j] = indices[from + j] - slotOffset;
            if (row[j] < 0) {
                throw new IllegalArgumentException("slot " + indices[from + j] + " is not in the part of the pool that starts at " + slotOffset);
            }
        }
        return row;
    }

    public static Builder builder()
    {
        return new Builder();
    }

    public int size()
    {
        return tokens.length;
    }

    /** Requests in the batch; logits come back in this order: extend requests, then decode requests. */
    public int requests()
    {
        return extend.batchSize() + decode.batchSize();
    }

    /** The row of each request's last token: where its next-token logits come from. */
    public int[] lastTokenRows()
    {
        int[] rows = new int[requests()];
        for (int i = 0; i < extend.batchSize(); i++) {
            rows[i] = extend.qoIndptr()[i + 1] - 1;
        }
        for (int i = 0; i < decode.batchSize(); i++) {
            rows[extend.batchSize() + i] = extend.tokens() + i;
        }
        return rows;
    }

    private static void checkToken(int row, int position, int slot, int expectedPosition, int expectedSlot)
    {
        if (position != expectedPosition || slot != expectedSlot) {
            throw new IllegalArgumentException("token " + row + ": position " + position + " slot " + slot
                    + " but the metadata says position " + expectedPosition + " slot " + expectedSlot);
        }
    }

    /**
     * Builds a batch from each request's {@code req_to_token} row (slot of every position; the row may be
     * longer than the sequence). Extend requests come first in the batch, whatever the order of the calls.
     */
    public static final class Builder
    {
        private final List<int[]> extendTokens = new ArrayList<>();
        private final List<Integer> prefixLens = new ArrayList<>();
        private final List<int[]> extendRows = new ArrayList<>();
        private final List<Integer> decodeTokens = new ArrayList<>();
        private final List<Integer> decodePositions = new ArrayList<>();
        private final List<int[]> decodeRows = new ArrayList<>();

        private Builder() {}

        /** A prompt chunk: {@code tokens} at positions {@code prefixLen ..}; positions before it are in the pool already. */
        public Builder extend(int[] tokens, int prefixLen, int[] reqToToken)
        {
            if (tokens.length < 1 || prefixLen < 0 || reqToToken.length < prefixLen + tokens.length) {
                throw new IllegalArgumentException("extend of " + tokens.length + " tokens after prefix " + prefixLen
                        + " needs a req_to_token row of at least " + (prefixLen + tokens.length) + " slots, has " + reqToToken.length);
            }
            extendTokens.add(tokens.clone());
            prefixLens.add(prefixLen);
            extendRows.add(reqToToken);
            return this;
        }

        /** One decode token at {@code position}: it attends to positions {@code 0..position}. */
        public Builder decode(int token, int position, int[] reqToToken)
        {
            if (position < 0 || reqToToken.length <= position) {
                throw new IllegalArgumentException("decode at position " + position + " needs a req_to_token row of at least "
                        + (position + 1) + " slots, has " + reqToToken.length);
            }
            decodeTokens.add(token);
            decodePositions.add(position);
            decodeRows.add(reqToToken);
            return this;
        }

        /** @param numKvSplits the attention backend's {@code numKvSplits}, a function of the sequence length */
        public ForwardBatch build(IntUnaryOperator numKvSplits)
        {
            int e = extendTokens.size();
            int d = decodeTokens.size();
            int[] qoIndptr = new int[e + 1];
            int[] extendKvIndptr = new int[e + 1];
            int[] extendPrefix = new int[e];
            int[] extendSeq = new int[e];
            for (int i = 0; i < e; i++) {
                extendPrefix[i] = prefixLens.get(i);
                extendSeq[i] = extendPrefix[i] + extendTokens.get(i).length;
                qoIndptr[i + 1] = qoIndptr[i] + extendTokens.get(i).length;
                extendKvIndptr[i + 1] = extendKvIndptr[i] + extendSeq[i];
            }
            int[] decodeKvIndptr = new int[d + 1];
            int[] decodeSeq = new int[d];
            int[] splits = new int[d];
            for (int i = 0; i < d; i++) {
                decodeSeq[i] = decodePositions.get(i) + 1;
                decodeKvIndptr[i + 1] = decodeKvIndptr[i] + decodeSeq[i];
                splits[i] = numKvSplits.applyAsInt(decodeSeq[i]);
            }
            int count = qoIndptr[e] + d;
            int[] tokens = new int[count];
            int[] positions = new int[count];
            int[] slots = new int[count];
            int[] extendKv = new int[extendKvIndptr[e]];
            for (int i = 0; i < e; i++) {
                int[] row = extendRows.get(i);
                System.arraycopy(row, 0, extendKv, extendKvIndptr[i], extendSeq[i]);
                for (int j = 0; j < extendTokens.get(i).length; j++) {
                    int at = qoIndptr[i] + j;
                    tokens[at] = extendTokens.get(i)[j];
                    positions[at] = extendPrefix[i] + j;
                    slots[at] = row[positions[at]];
                }
            }
            int[] decodeKv = new int[decodeKvIndptr[d]];
            for (int i = 0; i < d; i++) {
                int[] row = decodeRows.get(i);
                System.arraycopy(row, 0, decodeKv, decodeKvIndptr[i], decodeSeq[i]);
                int at = qoIndptr[e] + i;
                tokens[at] = decodeTokens.get(i);
                positions[at] = decodePositions.get(i);
                slots[at] = row[positions[at]];
            }
            return new ForwardBatch(tokens, positions, slots,
                    new ExtendMetadata(qoIndptr, extendKvIndptr, extendKv, extendPrefix, extendSeq),
                    new DecodeMetadata(decodeKvIndptr, decodeKv, decodeSeq, splits));
        }
    }

    @Override
    public String toString()
    {
        return "ForwardBatch[extend=" + extend.batchSize() + " requests/" + extend.tokens() + " tokens, decode=" + decode.batchSize()
                + ", positions=" + Arrays.toString(Arrays.copyOf(positions, Math.min(8, positions.length))) + "...]";
    }
}
