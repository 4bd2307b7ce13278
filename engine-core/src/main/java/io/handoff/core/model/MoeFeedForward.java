package io.handoff.core.model;

import io.handoff.core.model.Kernels.Product;
import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.TensorShard;

import java.util.List;
import java.util.concurrent.ForkJoinPool;

import static java.util.Objects.requireNonNull;

/**
 * A DeepSeek-V2/V3 mixture-of-experts feed-forward layer: each token's routed SwiGLU experts, weighted by its
 * {@link MoeRouter} choice, plus the shared experts' SwiGLU.
 *
 * <p>Batch invariant: a token's output bits do not depend on the other tokens. Each expert runs only on the tokens routed
 * to it, through {@link Kernels#matmul}, whose every product has an order fixed by its length whatever the number of
 * tokens; a token's routed outputs are then summed in ascending expert index order, and the shared experts' output added
 * last.
 *
 * <p>In a tensor-parallel group the routed experts are spread over the ranks (expert parallelism): every rank routes every
 * token (the same bits), runs only the experts it owns, and the group all-gathers the routed outputs, each computed
 * by exactly one rank; the shared experts are replicated. The sum then runs on every rank in the same order as above.
 */
public final class MoeFeedForward
{
    /** One SwiGLU expert: {@code down · (silu(gate · x) * (up · x))}; gate and up are {@code [width, hidden]}, down {@code [hidden, width]}. */
    public record Expert(WeightMatrix gate, WeightMatrix up, WeightMatrix down)
    {
        public Expert
        {
            requireNonNull(gate, "gate is null");
            requireNonNull(up, "up is null");
            requireNonNull(down, "down is null");
            if (up.rows() != gate.rows() || up.cols() != gate.cols() || down.cols() != gate.rows() || down.rows() != gate.cols()) {
                throw new IllegalArgumentException("an expert's gate (" + shape(gate) + "), up (" + shape(up) + ") and down ("
                        + shape(down) + ") do not fit: gate and up are [width x hidden], down [hidden x width]");
            }
        }

        int width()
        {
            return gate.rows();
        }

        int hidden()
        {
            return gate.cols();
        }

        private static String shape(WeightMatrix w)
        {
            return w.rows() + " x " + w.cols();
        }
    }

    private final MoeConfig config;
    private final MoeRouter router;
    private final List<Expert> experts;
    private final Expert shared;
    private final int hidden;

    /** {@code shared} is {@code null} exactly when {@code config.sharedExperts()} is 0. */
    public MoeFeedForward(MoeConfig config, MoeRouter router, List<Expert> experts, Expert shared)
    {
        this.config = requireNonNull(config, "config is null");
        this.router = requireNonNull(router, "router is null");
        this.experts = List.copyOf(requireNonNull(experts, "experts is null"));
        this.hidden = router.hiddenSize();
        if (this.experts.size() != config.experts()) {
            throw new IllegalArgumentException(this.experts.size() + " routed experts given, the config has " + config.experts());
        }
        for (int e = 0; e < this.experts.size(); e++) {
            Expert expert = this.experts.get(e);
            if (expert.width() != config.intermediateSize() || expert.hidden() != hidden) {
                throw new IllegalArgumentException("routed expert " + e + " is " + expert.width() + " wide over " + expert.hidden()
                        + " hidden values, the config needs " + config.intermediateSize() + " over " + hidden);
            }
        }
        if ((shared == null) != (config.sharedExperts() == 0)) {
            throw new IllegalArgumentException(shared == null
                    ? "the config has " + config.sharedExperts() + " shared experts but no shared expert weights were given"
                    : "shared expert weights were given but the config has no shared experts");
        }
        if (shared != null && (shared.width() != config.sharedIntermediateSize() || shared.hidden() != hidden)) {
            throw new IllegalArgumentException("the shared experts are " + shared.width() + " wide over " + shared.hidden()
                    + " hidden values, the config needs " + config.sharedIntermediateSize() + " (sharedExperts x intermediateSize) over "
                    + hidden);
        }
        this.shared = shared;
    }

    public MoeConfig config()
    {
        return config;
    }

    /** The routed experts, by index. */
    public List<Expert> experts()
    {
        return experts;
    }

    public Expert expert(int index)
    {
        return experts.get(index);
    }

    /** The shared experts as one SwiGLU, {@code null} without any. */
    public Expert shared()
    {
        return shared;
    }

    /**
     * {@code out[t*hidden ..]} = the layer's output for the normalized hidden row {@code x[t*hidden ..]}, {@code t < tokens}.
     * {@code pool} may be {@code null} (everything on the calling thread).
     */
    public void forward(ForkJoinPool pool, float[] x, int tokens, float[] out)
    {
        forward(pool, x, tokens, out, Collective.NONE);
    }

    /** {@link #forward(ForkJoinPool, float[], int, float[])} as one rank of {@code group}: its experts computed, the others' gathered. */
    public void forward(ForkJoinPool pool, float[] x, int tokens, float[] out, Collective group)
    {
        requireNonNull(x, "x is null");
        requireNonNull(out, "out is null");
        if (tokens < 0 || x.length < (long) tokens * hidden || out.length < (long) tokens * hidden) {
            throw new IllegalArgumentException(tokens + " tokens of " + hidden + " values do not fit in x (" + x.length
                    + ") and out (" + out.length + ")");
        }
        int k = config.expertsPerToken();
        MoeRouter.Choice[] choices = new MoeRouter.Choice[tokens];
        Kernels.parallelFor(pool, tokens, t -> choices[t] = router.route(x, t * hidden));
        // routed[(t*k + j)*hidden ..]: token t's j-th chosen expert's output, unweighted
        float[] routed = new float[Math.multiplyExact(Math.multiplyExact(tokens, k), hidden)];
        TensorShard shard = group.shard();
        int[] owned = shard.bounds(experts.size(), 1);
        for (int e = owned[shard.rank()]; e < owned[shard.rank() + 1]; e++) {
            runExpert(pool, e, choices, x, routed);
        }
        if (!shard.whole()) {
            int[] owners = new int[tokens * k];
            for (int t = 0; t < tokens; t++) {
                for (int j = 0; j < k; j++) {
                    owners[t * k + j] = owner(owned, choices[t].experts()[j]);
                }
            }
            group.allGather(routed, Pieces.slots(hidden, owners, shard.size()));
        }
        float[] sharedOut = shared == null ? null : swiglu(pool, shared, x, tokens);
        for (int t = 0; t < tokens; t++) {
            float[] weights = choices[t].weights();
            int o = t * hidden;
            for (int i = 0; i < hidden; i++) {
                float sum = 0;
                for (int j = 0; j < k; j++) {
                    sum += weights[j] * routed[(t * k + j) * hidden + i];
                }
                out[o + i] = sharedOut == null ? sum : sum + sharedOut[o + i];
            }
        }
    }

    private static int owner(int[] bounds, int expert)
    {
        int r = 0;
        while (expert >= bounds[r + 1]) {
            r++;
        }
        return r;
    }

    /** Expert {@code e} on the tokens routed to it, its outputs into their slots of {@code routed}. */
    private void runExpert(ForkJoinPool pool, int e, MoeRouter.Choice[] choices, float[] x, float[] routed)
    {
        int k = config.expertsPerToken();
        int[] slots = new int[choices.length];
        int m = 0;
        for (int t = 0; t < choices.length; t++) {
            int[] chosen = choices[t].experts();
            for (int j = 0; j < k; j++) {
                if (chosen[j] == e) {
                    slots[m++] = t * k + j;
                }
            }
        }
        if (m == 0) {
            return;
        }
        float[] gathered = new float[m * hidden];
        for (int i = 0; i < m; i++) {
            System.arraycopy(x, slots[i] / k * hidden, gathered, i * hidden, hidden);
        }
        float[] y = swiglu(pool, experts.get(e), gathered, m);
        for (int i = 0; i < m; i++) {
            System.arraycopy(y, i * hidden, routed, slots[i] * hidden, hidden);
        }
    }

    private float[] swiglu(ForkJoinPool pool, Expert expert, float[] x, int tokens)
    {
        int width = expert.width();
        float[] gate = new float[tokens * width];
        float[] up = new float[tokens * width];
        Kernels.matmuls(pool, x, 0, hidden, tokens, new Product(gate, 0, width, expert.gate()), new Product(up, 0, width, expert.up()));
        Kernels.swiglu(pool, gate, up, tokens * width);
        float[] y = new float[tokens * hidden];
        Kernels.matmul(pool, y, 0, hidden, expert.down(), gate, 0, width, tokens);
        return y;
    }
}
