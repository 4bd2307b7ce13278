package io.handoff.core.scheduler;

import io.handoff.core.model.ForwardBatch;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvRows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.function.IntUnaryOperator;

import static java.util.Objects.requireNonNull;

/**
 * The decode-metadata probe of invariant I3 (seed 001: weeks went into dumping decode metadata and KV row
 * norms by hand). Before a decode step runs, on the compute thread, it checks what attention is about to read
 * against what the scheduler knows independently: each request's {@code kv_indptr} span against its
 * {@code seq_len}, {@code num_kv_splits} against the attention backend's own rule, every {@code kv_indices}
 * slot against the request's page list, and that sampled earlier KV rows are not all zero (never written:
 * a page the transfer or the prefill did not fill). A mismatch throws, which fails the step's requests loudly.
 * In {@link Mode#DUMP} it also returns one line per request for the log.
 */
public final class DecodeMetadataProbe
{
    /** {@code handoff.debug.decode-metadata-probe}. */
    public enum Mode
    {
        OFF, CHECK, DUMP;

        public static Mode parse(String text)
        {
            return valueOf(text.toUpperCase(Locale.ROOT));
        }
    }

    private static final int DUMP_INDICES = 4;

    private final Mode mode;
    private final KvCacheView kv;
    private final IntUnaryOperator numKvSplits;

    DecodeMetadataProbe(Mode mode, KvCacheView kv, IntUnaryOperator numKvSplits)
    {
        this.mode = requireNonNull(mode, "mode is null");
        this.kv = requireNonNull(kv, "kv is null");
        this.numKvSplits = requireNonNull(numKvSplits, "numKvSplits is null");
    }

    boolean enabled()
    {
        return mode != Mode.OFF;
    }

    /**
     * Checks the batch's decode metadata; {@code decodes} are its decode requests in batch order, each with the
     * snapshot of its page list taken when it was scheduled. Returns the dump lines ({@link Mode#DUMP}), or none.
     */
    List<String> inspect(long step, ForwardBatch batch, List<StepPlan.Decode> decodes)
    {
        if (mode == Mode.OFF) {
            return List.of();
        }
        DecodeMetadata metadata = batch.decode();
        List<String> dump = new ArrayList<>();
        for (int i = 0; i < metadata.batchSize(); i++) {
            StepPlan.Decode decode = decodes.get(i);
            String where = "decode-metadata probe, step " + step + ", request " + decode.request().request.rid();
            int from = metadata.kvIndptr()[i];
            int to = metadata.kvIndptr()[i + 1];
            int seqLen = metadata.seqLens()[i];
            if (to - from != seqLen) {
                throw new IllegalStateException(where + ": kv_indptr spans " + (to - from) + " slots but seq_len is " + seqLen);
            }
            if (metadata.numKvSplits()[i] != numKvSplits.applyAsInt(seqLen)) {
                throw new IllegalStateException(where + ": num_kv_splits is " + metadata.numKvSplits()[i] + " but the attention backend splits seq_len "
                        + seqLen + " into " + numKvSplits.applyAsInt(seqLen));
            }
            int[] indices = Arrays.copyOfRange(metadata.kvIndices(), from, to);
            checkSlots(where, indices, decode.pages());
            // Rows before the last one were written by earlier steps (or arrived by transfer); the last is this step's.
            TreeSet<Integer> sampled = new TreeSet<>(seqLen < 2 ? List.of() : List.of(0, (seqLen - 2) / 2, seqLen - 2));
            StringBuilder norms = new StringBuilder();
            for (int position : sampled) {
                double norm = keyRowNorm(indices[position]);
                if (norm == 0) {
                    throw new IllegalStateException(where + ": the layer-0 key row of position " + position + " (slot " + indices[position]
                            + ") is all zeros: it was never written, yet attention would read it");
                }
                norms.append(norms.isEmpty() ? "" : ", ").append(position).append('=').append(String.format(Locale.ROOT, "%.4g", norm));
            }
            if (mode == Mode.DUMP) {
                dump.add(where + ": seq_len " + seqLen + ", kv_indptr [" + from + ", " + to + "), kv_indices " + head(indices) + " ... "
                        + tail(indices) + ", num_kv_splits " + metadata.numKvSplits()[i] + ", slots match req_to_token and the page list"
                        + ", layer-0 key row norms {" + norms + "}");
            }
        }
        return dump;
    }

    /** Every slot attention reads is the one the request's own page list gives for that position. */
    private void checkSlots(String where, int[] indices, int[] pages)
    {
        int pageSize = kv.pageSize();
        for (int position = 0; position < indices.length; position++) {
            int page = position / pageSize;
            if (page >= pages.length) {
                throw new IllegalStateException(where + ": position " + position + " is read from slot " + indices[position]
                        + " but the request holds only " + pages.length + " pages");
            }
            int expected = pages[page] * pageSize + position % pageSize;
            if (indices[position] != expected) {
                throw new IllegalStateException(where + ": kv_indices reads position " + position + " from slot " + indices[position]
                        + " but the request's page " + page + " is pool page " + pages[page] + " (slot " + expected + ")");
            }
        }
    }

    private double keyRowNorm(int slot)
    {
        float[] row = new float[kv.keyRowElements()];
        KvRows.load(kv.keys(0), slot * kv.keyRowBytes(), kv.dtype(), row, 0, row.length);
        double sum = 0;
        for (float value : row) {
            sum += (double) value * value;
        }
        return Math.sqrt(sum);
    }

    private static String head(int[] indices)
    {
        return Arrays.toString(Arrays.copyOf(indices, Math.min(DUMP_INDICES, indices.length)));
    }

    private static String tail(int[] indices)
    {
        return Arrays.toString(Arrays.copyOfRange(indices, Math.max(0, indices.length - DUMP_INDICES), indices.length));
    }
}
