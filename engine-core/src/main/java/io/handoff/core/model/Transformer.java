package io.handoff.core.model;

import io.handoff.core.model.Kernels.Product;
import io.handoff.core.model.ModelWeights.Dense;
import io.handoff.core.model.ModelWeights.Gqa;
import io.handoff.core.model.ModelWeights.Layer;
import io.handoff.core.model.ModelWeights.Mla;
import io.handoff.core.model.ModelWeights.Moe;
import io.handoff.core.model.activation.ForwardArrays;
import io.handoff.core.model.activation.ForwardArrays.Slot;
import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ForkJoinPool;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import static io.handoff.core.model.Kernels.matmul;
import static io.handoff.core.model.Kernels.matmulRows;
import static io.handoff.core.model.Kernels.matmuls;
import static io.handoff.core.model.Kernels.rmsnorm;
import static io.handoff.core.model.Kernels.rope;
import static io.handoff.core.model.WeightMatrix.f32;
import static java.util.Objects.requireNonNull;

/**
 * The forward pass of one mixed step (extend chunks and decode tokens together). Per layer every token's
 * K/V row is written to its slot first (through {@link KvRows}, so a 16-bit pool rounds it once), then
 * attention reads every key it sees, the current chunk's included, back from the pool. Everything else is
 * per token, so a token's math is the same whichever request, batch or chunk it arrives in; MLA uses
 * the absorbed form on both the extend and the decode path for the same reason.
 *
 * <p>One step at a time per KV pool; the transformer itself holds only weights and its thread pool.
 *
 * <p>As rank {@code r} of a tensor-parallel group ({@link TensorShard}) it computes only its share of each matrix's output
 * rows: its query heads and the KV heads they read (its pool holds only those), its columns of the hidden state after
 * o and down, of the FFN after gate and up, its experts, and its slice of the vocabulary. After each, the group
 * all-gathers the pieces ({@link Collective}), so every rank holds the whole residual stream and every value is
 * computed exactly as one rank computes it: the same bits for every group size.
 */
public final class Transformer
        implements ModelRunner, AutoCloseable
{
    // column shares of the hidden state, the FFN and the vocabulary start at multiples of this (whole vectors)
    private static final int COLUMN_UNIT = 16;

    private final ModelConfig config;
    private final ModelWeights weights;
    private final AttentionGeometry geometry;
    private final ForkJoinPool pool;
    private final Collective group;
    private final TensorShard shard;
    // data-parallel attention (MLA): each rank attends for its own requests with every head, over its part of the pages
    private final boolean dataParallel;
    private final float[] ropeCos;
    private final float[] ropeSin;

    /** @param threads worker threads for matmuls; 1 runs everything on the caller's thread */
    public Transformer(ModelConfig config, WeightSource weights, int threads)
    {
        this(config, weights, threads, Collective.NONE);
    }

    /** One rank of a tensor-parallel group: {@code group.shard()} says which; its KV pool holds that rank's heads. */
    public Transformer(ModelConfig config, WeightSource weights, int threads, Collective group)
    {
        this(config, weights, threads, group, false);
    }

    /**
     * One rank of a group whose attention is data-parallel when {@code dataParallel} (MLA only): the rank attends for the
     * requests the step gives it ({@link ForwardBatch#owners}), with every head, its KV pool holding those requests' latents
     * (its part of the pages); the attention outputs are all-gathered by token, and the rest of each layer is split over
     * the ranks as tensor parallelism splits it. Every value is still computed exactly as one rank computes it.
     */
    public Transformer(ModelConfig config, WeightSource weights, int threads, Collective group, boolean dataParallel)
    {
        this.config = requireNonNull(config, "config is null");
        this.group = requireNonNull(group, "group is null");
        this.shard = group.shard();
        this.dataParallel = dataParallel;
        if (dataParallel && config.attentionGeometry().layout() != io.handoff.spi.attention.KvLayout.MLA) {
            throw new IllegalArgumentException("data-parallel attention is for MLA models (DeepSeek); model '" + config.name() + "' has "
                    + config.attentionGeometry().layout() + " attention: use tensor parallelism");
        }
        if (!dataParallel) {
            TensorShard.check(shard.size(), config.name(), config.heads(), config.kvHeads(), config.attentionGeometry().layout());
        }
        this.weights = ModelWeights.load(config, requireNonNull(weights, "weights is null"));
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be positive, was " + threads);
        }
        this.geometry = dataParallel ? config.attentionGeometry() : shard.attention(config.attentionGeometry());
        this.pool = threads == 1 ? null : new ForkJoinPool(threads);
        float[][] tables = Kernels.ropeTables(config.maxContext(), config.ropeDim(), config.ropeTheta(), config.ropeScaling());
        this.ropeCos = tables[0];
        this.ropeSin = tables[1];
    }

    /**
     * Floating-point operations of the weight matmuls for one token (2 per multiply-add), attention
     * excluded: what benchmarks divide by time to compare against the machine's matmul throughput.
     */
    public long matmulFlopsPerToken()
    {
        long elements = elements(weights.lmHead());
        for (ModelWeights.Layer layer : weights.layers()) {
            elements += switch (layer.feedForward()) {
                case ModelWeights.Dense d -> elements(d.swiglu());
                // a token runs its routed experts and the shared ones (its router's matmul too)
                case ModelWeights.Moe m -> (long) m.layer().config().expertsPerToken() * elements(m.layer().expert(0))
                        + (m.layer().shared() == null ? 0 : elements(m.layer().shared())) + (long) m.layer().config().experts() * config.hiddenSize();
            };
            elements += switch (layer.attention()) {
                case ModelWeights.Gqa g -> elements(g.q()) + elements(g.k()) + elements(g.v()) + elements(g.o());
                case ModelWeights.Mla m -> (m.qA() == null ? 0L : elements(m.qA())) + elements(m.qB()) + elements(m.kvA())
                        + m.ukT().length + m.uv().length + elements(m.o());
            };
        }
        return 2 * elements;
    }

    private static long elements(WeightMatrix matrix)
    {
        return (long) matrix.rows() * matrix.cols();
    }

    private static long elements(MoeFeedForward.Expert swiglu)
    {
        return elements(swiglu.gate()) + elements(swiglu.up()) + elements(swiglu.down());
    }

    /** What the weights are held as, for logs: the element types of the linear layers, and their bytes. */
    public String weightsDescription()
    {
        Map<String, Long> bytes = new TreeMap<>();
        Consumer<WeightMatrix> count = m -> bytes.merge(m.elementType(), m.byteSize(), Long::sum);
        count.accept(weights.embedding());
        if (weights.lmHead() != weights.embedding()) {
            count.accept(weights.lmHead());
        }
        Consumer<MoeFeedForward.Expert> swiglu = e -> List.of(e.gate(), e.up(), e.down()).forEach(count);
        for (ModelWeights.Layer layer : weights.layers()) {
            switch (layer.feedForward()) {
                case ModelWeights.Dense d -> swiglu.accept(d.swiglu());
                case ModelWeights.Moe m -> {
                    m.layer().experts().forEach(swiglu);
                    if (m.layer().shared() != null) {
                        swiglu.accept(m.layer().shared());
                    }
                }
            }
            switch (layer.attention()) {
                case ModelWeights.Gqa g -> List.of(g.q(), g.k(), g.v(), g.o()).forEach(count);
                case ModelWeights.Mla m -> {
                    List.of(m.qB(), m.kvA(), m.o()).forEach(count);
                    if (m.qA() != null) {
                        count.accept(m.qA());
                    }
                }
            }
        }
        return bytes.entrySet().stream().map(e -> e.getKey() + " " + (e.getValue() >> 20) + " MiB")
                .collect(Collectors.joining(", "));
    }

    @Override
    public ModelConfig config()
    {
        return config;
    }

    /** The attention this transformer runs: the model's, or a tensor-parallel rank's heads of it. */
    public AttentionGeometry attentionGeometry()
    {
        return geometry;
    }

    @Override
    public float[][] forwardRows(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, LayerHook hook, int[] logitRows)
    {
        requireNonNull(batch, "batch is null");
        for (int row : requireNonNull(logitRows, "logitRows is null")) {
            if (row < 0 || row >= batch.size()) {
                throw new IllegalArgumentException("logit row " + row + " is outside the batch's " + batch.size() + " tokens");
            }
        }
        return run(batch, kv, attention, hook, logitRows);
    }

    /** Like {@link #forward} but returns the logits at every token of the batch, {@code [tokens][vocab]}. */
    public float[][] forwardAllPositions(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, LayerHook hook)
    {
        int[] rows = new int[batch.size()];
        Arrays.setAll(rows, i -> i);
        return run(batch, kv, attention, hook, rows);
    }

    private float[][] run(ForwardBatch batch, KvCacheView kv, AttentionBackend attention, LayerHook hook, int[] logitRows)
    {
        requireNonNull(attention, "attention is null");
        requireNonNull(hook, "hook is null");
        check(batch, kv);
        int n = batch.size();
        int hidden = config.hiddenSize();
        int ffn = config.intermediateSize();
        // every one of these is written whole before it is read (layer after layer)
        float[] x = ForwardArrays.get(Slot.HIDDEN, n * hidden);
        for (int t = 0; t < n; t++) {
            weights.embedding().readRow(batch.tokens()[t], x, t * hidden);
        }
        float[] xn = ForwardArrays.get(Slot.NORMED, n * hidden);
        float[] delta = ForwardArrays.get(Slot.DELTA, n * hidden);
        float[] gate = ForwardArrays.get(Slot.GATE, n * ffn);
        float[] up = ForwardArrays.get(Slot.UP, n * ffn);
        float[] moeOut = config.moe() == null ? null : ForwardArrays.get(Slot.MOE_OUT, n * hidden);
        Owned owned = dataParallel ? Owned.of(batch, shard, kv.slots(), hidden) : null;
        for (int l = 0; l < config.layers(); l++) {
            Layer layer = weights.layers().get(l);
            normalize(xn, x, layer.inputNorm(), n);
            switch (layer.attention()) {
                case Gqa gqa -> gqaAttention(l, gqa, batch, kv, attention, xn, delta);
                case Mla mla -> {
                    if (owned == null) {
                        mlaAttention(l, mla, batch, kv, attention, xn, delta);
                    }
                    else {
                        float[] mine = new float[owned.rows.length * hidden];
                        mlaAttention(l, mla, owned.batch, kv, attention, owned.gather(xn, hidden), mine);
                        owned.scatter(mine, delta, hidden);
                        group.allGather(delta, owned.pieces);
                    }
                }
            }
            add(x, delta);
            normalize(xn, x, layer.postAttentionNorm(), n);
            switch (layer.feedForward()) {
                case Dense d -> {
                    int[] columns = shard.bounds(ffn, COLUMN_UNIT);
                    int from = columns[shard.rank()];
                    int to = columns[shard.rank() + 1];
                    matmuls(pool, xn, 0, hidden, n, new Product(gate, from, ffn, d.swiglu().gate(), from, to),
                            new Product(up, from, ffn, d.swiglu().up(), from, to));
                    Kernels.swiglu(pool, gate, up, n * ffn);
                    group.allGather(gate, Pieces.columns(n, ffn, 0, columns));
                    hiddenRows(delta, d.swiglu().down(), gate, ffn, n);
                    add(x, delta);
                }
                case Moe m -> {
                    m.layer().forward(pool, xn, n, moeOut, group);
                    add(x, moeOut);
                }
            }
            hook.afterLayer(l);
        }
        int vocab = config.vocabSize();
        float[] last = new float[logitRows.length * hidden];
        for (int i = 0; i < logitRows.length; i++) {
            rmsnorm(last, i * hidden, x, logitRows[i] * hidden, weights.finalNorm(), hidden, config.rmsEps());
        }
        float[] logits = new float[logitRows.length * vocab];
        int[] slices = shard.bounds(vocab, COLUMN_UNIT);
        int first = slices[shard.rank()];
        matmulRows(pool, logits, first, vocab, weights.lmHead(), first, slices[shard.rank() + 1], last, 0, hidden, logitRows.length);
        // only the leader samples: the other ranks' logits are their slices alone
        group.gather(logits, Pieces.columns(logitRows.length, vocab, 0, slices));
        float[][] result = new float[logitRows.length][];
        for (int i = 0; i < logitRows.length; i++) {
            result[i] = Arrays.copyOfRange(logits, i * vocab, (i + 1) * vocab);
        }
        return result;
    }

    private void gqaAttention(int l, Gqa w, ForwardBatch batch, KvCacheView kv, AttentionBackend attention, float[] xn, float[] out)
    {
        int n = batch.size();
        int hidden = config.hiddenSize();
        int headDim = config.headDim();
        // this rank's heads: all of them on a single rank
        int heads = geometry.numQHeads();
        int kvHeads = geometry.numKvHeads();
        int qFrom = shard.firstHead(config.heads()) * headDim;
        int kvFrom = shard.firstKvHead(config.kvHeads()) * headDim;
        int qRow = heads * headDim;
        int kvRow = kvHeads * headDim;
        // written whole by the products
        float[] q = ForwardArrays.get(Slot.QUERY, n * qRow);
        float[] k = ForwardArrays.get(Slot.KEY, n * kvRow);
        float[] v = ForwardArrays.get(Slot.VALUE, n * kvRow);
        matmuls(pool, xn, 0, hidden, n, new Product(q, 0, qRow, w.q(), qFrom, qFrom + qRow), new Product(k, 0, kvRow, w.k(), kvFrom, kvFrom + kvRow),
                new Product(v, 0, kvRow, w.v(), kvFrom, kvFrom + kvRow));
        for (int t = 0; t < n; t++) {
            int pos = batch.positions()[t];
            if (w.qBias() != null) {
                Kernels.addBias(q, t * qRow, w.qBias(), qFrom, qRow);
                Kernels.addBias(k, t * kvRow, w.kBias(), kvFrom, kvRow);
                Kernels.addBias(v, t * kvRow, w.vBias(), kvFrom, kvRow);
            }
            for (int h = 0; h < heads; h++) {
                int off = t * qRow + h * headDim;
                if (w.qNorm() != null) {
                    rmsnorm(q, off, q, off, w.qNorm(), headDim, config.rmsEps());
                }
                rope(q, off, headDim, pos, ropeCos, ropeSin, false);
            }
            for (int h = 0; h < kvHeads; h++) {
                int off = t * kvRow + h * headDim;
                if (w.kNorm() != null) {
                    rmsnorm(k, off, k, off, w.kNorm(), headDim, config.rmsEps());
                }
                rope(k, off, headDim, pos, ropeCos, ropeSin, false);
            }
            long slot = batch.slots()[t];
            KvRows.store(kv.keys(l), slot * kv.keyRowBytes(), kv.dtype(), k, t * kvRow, kvRow);
            KvRows.store(kv.values(l), slot * kv.valueRowBytes(), kv.dtype(), v, t * kvRow, kvRow);
        }
        float[] attended = allHeads(attend(l, batch, attention, q, kv.dtype()), n, config.heads() * headDim, qFrom);
        hiddenRows(out, w.o(), attended, config.heads() * headDim, n);
    }

    /** A rank's attention output (its heads' columns) placed among every head's, and the others' gathered. */
    private float[] allHeads(float[] mine, int n, int width, int from)
    {
        if (shard.whole()) {
            return mine;
        }
        int local = mine.length / n;
        float[] all = new float[n * width];
        for (int t = 0; t < n; t++) {
            System.arraycopy(mine, t * local, all, t * width + from, local);
        }
        int[] bounds = new int[shard.size() + 1];
        for (int r = 0; r <= shard.size(); r++) {
            bounds[r] = r * local;
        }
        group.allGather(all, Pieces.columns(n, width, 0, bounds));
        return all;
    }

    /** {@code out = w · in} for the whole hidden state: this rank's columns computed, the others' gathered. */
    private void hiddenRows(float[] out, WeightMatrix w, float[] in, int inWidth, int n)
    {
        int hidden = config.hiddenSize();
        int[] columns = shard.bounds(hidden, COLUMN_UNIT);
        int from = columns[shard.rank()];
        matmulRows(pool, out, from, hidden, w, from, columns[shard.rank() + 1], in, 0, inWidth, n);
        group.allGather(out, Pieces.columns(n, hidden, 0, columns));
    }


    /**
     * DeepSeek-style MLA in the absorbed form. The pool row is {@code [c | k_rope]}: the normalized latent
     * and the rotated key part shared by all heads. Each head's query becomes {@code [W_UK^T q_nope | q_rope]},
     * attention returns a latent per head, and W_UV maps it to the head's value.
     */
    private void mlaAttention(int l, Mla w, ForwardBatch batch, KvCacheView kv, AttentionBackend attention, float[] xn, float[] out)
    {
        int n = batch.size();
        int hidden = config.hiddenSize();
        // this rank's heads; the latent row is every head's, so every rank stores it whole
        int heads = geometry.numQHeads();
        int firstHead = dataParallel ? 0 : shard.firstHead(config.heads());
        int nope = config.qkNopeHeadDim();
        int ropeDim = config.qkRopeHeadDim();
        int qHead = nope + ropeDim;
        int rank = config.kvLoraRank();
        int vDim = config.vHeadDim();
        int row = rank + ropeDim;
        float[] q = new float[n * heads * qHead];
        if (w.qA() != null) {
            int qLora = config.qLoraRank();
            float[] qa = new float[n * qLora];
            matmul(pool, qa, 0, qLora, w.qA(), xn, 0, hidden, n);
            for (int t = 0; t < n; t++) {
                rmsnorm(qa, t * qLora, qa, t * qLora, w.qANorm(), qLora, config.rmsEps());
            }
            matmulRows(pool, q, 0, heads * qHead, w.qB(), firstHead * qHead, (firstHead + heads) * qHead, qa, 0, qLora, n);
        }
        else {
            matmulRows(pool, q, 0, heads * qHead, w.qB(), firstHead * qHead, (firstHead + heads) * qHead, xn, 0, hidden, n);
        }
        float[] latent = new float[n * row];
        matmul(pool, latent, 0, row, w.kvA(), xn, 0, hidden, n);
        float[] qAttn = new float[n * heads * row];
        for (int t = 0; t < n; t++) {
            int pos = batch.positions()[t];
            rmsnorm(latent, t * row, latent, t * row, w.kvANorm(), rank, config.rmsEps());
            rope(latent, t * row + rank, ropeDim, pos, ropeCos, ropeSin, true);
            KvRows.store(kv.keys(l), batch.slots()[t] * kv.keyRowBytes(), kv.dtype(), latent, t * row, row);
            for (int h = 0; h < heads; h++) {
                int qRope = (t * heads + h) * qHead + nope;
                rope(q, qRope, ropeDim, pos, ropeCos, ropeSin, true);
                System.arraycopy(q, qRope, qAttn, (t * heads + h) * row + rank, ropeDim);
            }
        }
        for (int h = 0; h < heads; h++) {
            matmul(pool, qAttn, h * row, heads * row, f32(w.ukT(), (firstHead + h) * rank * nope, rank, nope), q, h * qHead, heads * qHead, n);
        }
        float[] attended = attend(l, batch, attention, qAttn, kv.dtype());
        float[] values = new float[n * heads * vDim];
        for (int h = 0; h < heads; h++) {
            matmul(pool, values, h * vDim, heads * vDim, f32(w.uv(), (firstHead + h) * vDim * rank, vDim, rank), attended, h * rank, heads * rank, n);
        }
        if (dataParallel) {
            // every head of this rank's own tokens: the whole o projection here, the rows gathered by token after
            matmulRows(pool, out, 0, hidden, w.o(), 0, hidden, values, 0, config.heads() * vDim, n);
        }
        else {
            hiddenRows(out, w.o(), allHeads(values, n, config.heads() * vDim, firstHead * vDim), config.heads() * vDim, n);
        }
    }

    /**
     * A data-parallel rank's share of a step: its requests as a batch of their own (slots in its part of the pool), which
     * rows of the step they are, and which rank computes each row (for the all-gather of the attention outputs).
     */
    private record Owned(ForwardBatch batch, int[] rows, Pieces pieces)
    {
        static Owned of(ForwardBatch step, TensorShard shard, int rankSlots, int hidden)
        {
            int[][] rows = new int[1][];
            ForwardBatch mine = step.ownedBy(shard.rank(), shard.rank() * rankSlots, rows);
            int[] rowOwners = new int[step.size()];
            int e = step.extend().batchSize();
            for (int i = 0; i < e; i++) {
                Arrays.fill(rowOwners, step.extend().qoIndptr()[i], step.extend().qoIndptr()[i + 1], step.owners()[i]);
            }
            for (int i = 0; i < step.decode().batchSize(); i++) {
                rowOwners[step.extend().tokens() + i] = step.owners()[e + i];
            }
            return new Owned(mine, rows[0], Pieces.slots(hidden, rowOwners, shard.size()));
        }

        float[] gather(float[] all, int width)
        {
            float[] mine = new float[rows.length * width];
            for (int i = 0; i < rows.length; i++) {
                System.arraycopy(all, rows[i] * width, mine, i * width, width);
            }
            return mine;
        }

        void scatter(float[] mine, float[] all, int width)
        {
            for (int i = 0; i < rows.length; i++) {
                System.arraycopy(mine, i * width, all, rows[i] * width, width);
            }
        }
    }

    /**
     * Attention for the extend tokens (the batch's first rows), then the decode tokens. The queries are rounded
     * to the pool's element type first, as the keys were on store: a 16-bit pool means 16-bit scores' operands.
     */
    private float[] attend(int l, ForwardBatch batch, AttentionBackend attention, float[] q, KvDtype dtype)
    {
        KvRows.round(q, 0, q.length, dtype);
        int qRow = geometry.numQHeads() * geometry.qkDim();
        int oRow = geometry.numQHeads() * geometry.vDim();
        int e = batch.extend().tokens();
        int d = batch.decode().batchSize();
        float[] out = new float[(e + d) * oRow];
        if (e > 0) {
            float[] qe = d == 0 ? q : Arrays.copyOf(q, e * qRow);
            float[] oe = d == 0 ? out : new float[e * oRow];
            attention.extend(l, batch.extend(), qe, oe);
            if (oe != out) {
                System.arraycopy(oe, 0, out, 0, e * oRow);
            }
        }
        if (d > 0) {
            float[] qd = e == 0 ? q : Arrays.copyOfRange(q, e * qRow, (e + d) * qRow);
            float[] od = e == 0 ? out : new float[d * oRow];
            attention.decode(l, batch.decode(), qd, od);
            if (od != out) {
                System.arraycopy(od, 0, out, e * oRow, d * oRow);
            }
        }
        return out;
    }

    private void normalize(float[] out, float[] x, float[] weight, int tokens)
    {
        int hidden = config.hiddenSize();
        for (int t = 0; t < tokens; t++) {
            rmsnorm(out, t * hidden, x, t * hidden, weight, hidden, config.rmsEps());
        }
    }

    private static void add(float[] x, float[] delta)
    {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }

    private void check(ForwardBatch batch, KvCacheView kv)
    {
        requireNonNull(batch, "batch is null");
        requireNonNull(kv, "kv is null");
        if (kv.layers() != config.layers() || kv.keyRowElements() != geometry.keyRowElements()
                || kv.valueRowElements() != geometry.valueRowElements() || kv.valuesInKeyRow() != config.kvValuesInKeyRow()) {
            throw new IllegalArgumentException("KV pool (" + kv.layers() + " layers, rows " + kv.keyRowElements() + "/"
                    + kv.valueRowElements() + ") does not fit model '" + config.name() + "' (" + config.layers() + " layers, rows "
                    + geometry.keyRowElements() + "/" + geometry.valueRowElements() + ")");
        }
        for (int t = 0; t < batch.size(); t++) {
            int token = batch.tokens()[t];
            int position = batch.positions()[t];
            int slot = batch.slots()[t];
            long slots = dataParallel ? (long) kv.slots() * shard.size() : kv.slots();
            if (token < 0 || token >= config.vocabSize() || position >= config.maxContext() || slot < 0 || slot >= slots) {
                throw new IllegalArgumentException("token " + t + ": id " + token + " (vocab " + config.vocabSize() + "), position "
                        + position + " (max context " + config.maxContext() + "), slot " + slot + " (pool has " + kv.slots() + ")");
            }
        }
    }

    @Override
    public void close()
    {
        if (pool != null) {
            pool.shutdown();
        }
    }

    /** Called after each layer of a step: where the scheduler puts its "forward: after layer l" fault point. */
    @FunctionalInterface
    public interface LayerHook
    {
        LayerHook NONE = layer -> {};

        void afterLayer(int layer);
    }
}
