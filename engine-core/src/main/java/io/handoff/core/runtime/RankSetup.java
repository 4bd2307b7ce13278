package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.parallel.LocalRanks;
import io.handoff.core.parallel.RankGroup;
import io.handoff.core.parallel.RankLauncher;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.spi.attention.AttentionArithmetic;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * How a tensor-parallel group is set up from the configuration ({@code handoff.parallel}): what every rank must agree
 * on, how large a frame between ranks may be, how many threads each rank computes with, and how rank 0 starts the
 * others on this host.
 */
final class RankSetup
{
    static final String SIZE_KEY = "handoff.parallel.tensor-size";

    private RankSetup() {}

    static final String DATA_PARALLEL_KEY = "handoff.parallel.data-parallel-size";

    /** The ranks of the server: its tensor-parallel size, or its data-parallel size (one of them is 1). */
    static int size(Config config)
    {
        int tensor = config.getInt(SIZE_KEY);
        int data = dataParallel(config);
        if (tensor > 1 && data > 1) {
            throw new IllegalArgumentException(SIZE_KEY + " = " + tensor + " and " + DATA_PARALLEL_KEY + " = " + data + ": a server runs "
                    + "tensor-parallel or data-parallel attention ranks, not both; set one of them to 1");
        }
        return Math.max(tensor, data);
    }

    /** The data-parallel attention ranks ({@value #DATA_PARALLEL_KEY}); 1 without. */
    static int dataParallel(Config config)
    {
        return config.getInt(DATA_PARALLEL_KEY);
    }

    /** What a rank serves, which the leader compares with its own: model, KV rows, dtype, page size and arithmetic. */
    static String identity(ModelConfig model, KvGeometry kv, AttentionArithmetic arithmetic)
    {
        return model.name() + " " + model.compatibilityHash() + " kv " + kv.keyRowElements() + "/" + kv.valueRowElements() + " " + kv.dtype()
                + " page " + kv.pageSize() + " " + arithmetic;
    }

    /**
     * The largest frame a step can need: every token of the largest step times the widest array a collective moves (the
     * logits of every prompt row at worst), plus the step's page lists; a longer frame is refused before it is read.
     */
    static long maxFrameBytes(Config config, ModelConfig model)
    {
        long tokens = (long) config.getInt("handoff.scheduler.chunked-prefill-size") + config.getInt("handoff.scheduler.max-running-requests");
        long width = Math.max(Math.max(model.hiddenSize(), model.intermediateSize()), model.vocabSize());
        width = Math.max(width, (long) model.heads() * Math.max(model.headDim(), Math.max(model.vHeadDim(), model.kvLoraRank() + model.qkRopeHeadDim())));
        if (model.moe() != null) {
            width = Math.max(width, (long) model.moe().expertsPerToken() * model.hiddenSize());
        }
        long plan = 4L * (config.getInt("handoff.scheduler.max-running-requests") + 2L) * model.maxContext() * 2 + (1 << 20);
        return Math.min(Integer.MAX_VALUE - 64L, 4 * tokens * width + plan);
    }

    /** Threads per rank: {@code handoff.scheduler.threads}, or this host's cores shared by the ranks it runs. */
    static int threads(Config config, int size)
    {
        int threads = config.getInt("handoff.scheduler.threads");
        if (threads > 0) {
            return threads;
        }
        int local = config.getBoolean("handoff.parallel.spawn-ranks") ? size : 1;
        return Math.max(1, Runtime.getRuntime().availableProcessors() / local);
    }

    static RankGroup.Settings settings(Config config, ClusterSecurity security, ModelConfig model, String identity, int pages, Optional<Path> poolFile)
    {
        return new RankGroup.Settings(size(config), config.getString("handoff.parallel.leader-host"), config.getInt("handoff.parallel.leader-port"),
                security, config.getDuration("handoff.parallel.startup-timeout"), config.getDuration("handoff.parallel.heartbeat-timeout"),
                config.getDuration("handoff.parallel.step-timeout"), maxFrameBytes(config, model), identity, pages, poolFile);
    }

    /** Ranks 1.. as processes on this host reading this process's configuration, or none when they join on their own. */
    static RankLauncher launcher(Config config, ConfigSource source)
    {
        if (!config.getBoolean("handoff.parallel.spawn-ranks")) {
            return RankLauncher.NONE;
        }
        return new LocalRanks("handoff.core", RankWorkerMain.class.getName(), (rank, leader) -> {
            List<String> args = new ArrayList<>(List.of("--rank", Integer.toString(rank), "--leader", leader));
            source.file().ifPresent(file -> args.addAll(List.of("--config", file.toAbsolutePath().toString())));
            for (Map.Entry<String, String> override : source.overrides().entrySet()) {
                args.add("-D" + override.getKey() + "=" + override.getValue());
            }
            return args;
        });
    }
}
