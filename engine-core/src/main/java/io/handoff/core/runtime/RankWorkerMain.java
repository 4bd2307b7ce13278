package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.fault.FaultSpec;
import io.handoff.core.disagg.peer.EngineTransferContext;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.transfer.PoolFileGrant;
import io.handoff.core.model.Transformer;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.parallel.CollectiveBench;
import io.handoff.core.parallel.RankWorker;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.plugin.PluginEntry;
import io.handoff.core.plugin.PluginRegistry;
import io.handoff.spi.attention.AttentionBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A tensor-parallel rank other than 0: it reads the configuration as the leader does, maps the same checkpoint, joins
 * the leader, builds its pool and attention for its heads, and runs the leader's steps until told to stop. What rank 0
 * starts on its host ({@code --rank R --leader HOST:PORT [--config FILE] [-Dkey=value ...]}), and what
 * {@code handoff serve --rank R --leader HOST:PORT} runs on another host.
 */
public final class RankWorkerMain
{
    private static final Logger log = LogManager.getLogger(RankWorkerMain.class);

    private RankWorkerMain() {}

    public static void main(String[] args)
    {
        int rank = -1;
        String leader = null;
        String bench = null;
        Optional<Path> file = Optional.empty();
        Map<String, String> overrides = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--rank" -> rank = Integer.parseInt(args[++i]);
                case "--leader" -> leader = args[++i];
                case "--config" -> file = Optional.of(Path.of(args[++i]));
                case "--collective-bench" -> bench = args[++i];
                default -> {
                    int eq = arg.indexOf('=');
                    if (!arg.startsWith("-D") || eq < 0) {
                        System.err.println("usage: RankWorkerMain --rank R --leader HOST:PORT [--config FILE] [-Dkey=value ...]; got '" + arg + "'");
                        System.exit(2);
                    }
                    overrides.put(arg.substring(2, eq), arg.substring(eq + 1));
                }
            }
        }
        if (rank < 1 || leader == null) {
            System.err.println("usage: RankWorkerMain --rank R --leader HOST:PORT: a rank of 1 or more and the leader's address are needed");
            System.exit(2);
        }
        System.exit(bench != null ? benchCollective(rank, leader, bench) : run(new ConfigSource(file, overrides, System.getenv()), rank, leader));
    }

    /**
     * A rank of {@code handoff bench collective}: no model, only the benchmark's all-gathers ({@link CollectiveBench}),
     * {@code spec} being {@code SIZE,...:WARMUP,...:ROUNDS,...} (one of each per size).
     */
    static int benchCollective(int rank, String leader, String spec)
    {
        String[] parts = spec.split(":");
        long[] sizes = java.util.Arrays.stream(parts[0].split(",")).mapToLong(Long::parseLong).toArray();
        try (RankWorker worker = RankWorker.join(leader, rank, CollectiveBench.IDENTITY, ClusterSecurity.loopbackOnly(), Duration.ofSeconds(60),
                Duration.ofSeconds(60), CollectiveBench.maxFrameBytes(sizes))) {
            worker.ready();
            CollectiveBench.run(worker, sizes, ints(parts[1]), ints(parts[2]));
            worker.awaitShutdown();
            return 0;
        }
        catch (IOException | RuntimeException e) {
            log.error("collective benchmark rank {}: {}", rank, e.getMessage(), e);
            return 1;
        }
    }

    private static int[] ints(String list)
    {
        return java.util.Arrays.stream(list.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    /** This rank's KV pool: its slice of the leader's pool file when the leader named one (checked first), else its own memory. */
    private static KvPool pool(KvGeometry geometry, RankWorker worker, int size, int dataParallel)
            throws IOException
    {
        if (worker.poolFile().isEmpty()) {
            return KvPool.allocate(geometry, worker.pages());
        }
        Path file = worker.poolFile().get();
        if (dataParallel > 1) {
            PoolFileGrant.checkRankPool(file, EngineTransferContext.sharedMemoryBase(), Math.multiplyExact(geometry.footprintBytes(worker.pages()),
                    (long) size));
            return KvPool.mapDataParallelRank(geometry, worker.pages(), file, worker.shard().rank(), dataParallel);
        }
        PoolFileGrant.checkRankPool(file, EngineTransferContext.sharedMemoryBase(), Math.multiplyExact(geometry.footprintBytes(worker.pages()), (long) size));
        return KvPool.mapRankSlice(geometry, worker.pages(), file, worker.shard().rank());
    }

    /** Runs rank {@code rank} of the group whose leader is at {@code leader}; returns the process's exit code. */
    public static int run(ConfigSource configSource, int rank, String leader)
    {
        try (Engine engine = Engine.start(configSource);
                ModelSource source = ModelSource.open(engine.config().config())) {
            Config config = engine.config().config();
            int size = RankSetup.size(config);
            int dataParallel = RankSetup.dataParallel(config);
            // data-parallel attention: every head here too, for this rank's own requests
            TensorShard shard = dataParallel > 1 ? TensorShard.WHOLE : new TensorShard(rank, size);
            if (dataParallel == 1) {
                TensorShard.check(size, source.config().name(), source.config().heads(), source.config().kvHeads(),
                        source.config().attentionGeometry().layout());
            }
            KvSizing sizing = KvSizing.of(config, source, shard);
            AttentionChoice choice = AttentionChoice.of(engine, source, shard, sizing.pageSize(), sizing.dtype());
            String identity = RankSetup.identity(source.config(), sizing.geometry(), choice.geometry().arithmetic());
            try (RankWorker worker = RankWorker.join(leader, rank, identity, engine.security(), config.getDuration("handoff.parallel.startup-timeout"),
                    config.getDuration("handoff.parallel.heartbeat-timeout"), RankSetup.maxFrameBytes(config, source.config()))) {
                if (worker.shard().size() != size) {
                    worker.refuse("rank " + rank + " is configured for " + size + " ranks, the leader for " + worker.shard().size());
                    return 1;
                }
                try (KvPool kv = pool(sizing.geometry(), worker, size, dataParallel);
                        Transformer model = new Transformer(source.config(), source.weights(), RankSetup.threads(config, size), worker, dataParallel > 1)) {
                    PluginEntry entry = engine.plugins().find(choice.id()).orElseThrow();
                    AttentionBackend attention = PluginRegistry.inContext(engine.plugins().loaderOf(entry),
                            () -> choice.provider().create(choice.geometry(), kv.view(), choice.settings()));
                    log.info("rank {} of {}: model {}, {} query heads, KV pool {} pages ({} MiB), {} compute threads", rank, size, source.config().name(),
                            choice.geometry().numQHeads(), kv.pages(), kv.footprintBytes() >> 20, RankSetup.threads(config, size));
                    FaultInjector faults = FaultSpec.parse(config.getStringList("handoff.debug.faults"));
                    long[] steps = {0};
                    worker.serve((batch, rows) -> {
                        long step = ++steps[0];
                        model.forwardRows(batch, kv.view(), attention, layer -> faults.hit(FaultPoint.RANK_AFTER_LAYER, step, layer), rows);
                    }, kv.view().slots() * dataParallel);
                    log.info("rank {}: the leader stopped the group", rank);
                    return 0;
                }
                catch (Exception e) {
                    worker.refuse(String.valueOf(e.getMessage()));
                    throw e;
                }
            }
        }
        catch (IOException e) {
            log.error("rank {}: the link to the leader at {} failed: {}", rank, leader, e.getMessage());
            return 1;
        }
        catch (Exception e) {
            log.error("rank {} stopped: {}", rank, e.getMessage(), e);
            return 1;
        }
    }
}
