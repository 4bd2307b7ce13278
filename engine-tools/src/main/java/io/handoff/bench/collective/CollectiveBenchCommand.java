package io.handoff.bench.collective;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.parallel.CollectiveBench;
import io.handoff.core.parallel.LocalRanks;
import io.handoff.core.parallel.RankGroup;
import io.handoff.core.runtime.RankWorkerMain;
import io.handoff.core.security.ClusterSecurity;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/**
 * {@code handoff bench collective}: the all-gather a tensor-parallel step runs after each split matrix, between real rank
 * processes on this host, at sizes from a decode step's to a prefill's, against a single-thread memcpy of the same bytes
 * measured in the same run.
 */
@Command(name = "collective", mixinStandardHelpOptions = true,
        description = "All-gather between tensor-parallel rank processes on this host (the collective every split matrix of a step ends "
                + "with), per call latency and GB/s, against memcpy of the same bytes in the same run.")
public final class CollectiveBenchCommand
        implements Callable<Integer>
{
    private static final long KIB = 1024;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "2", description = "Ranks, 2..8 (default 2).")
    int ranks;

    @Option(names = "--sizes", paramLabel = "BYTES", split = ",", description = "Bytes of the gathered array, each rank owning an even "
            + "share (default 4096,65536,1048576,4194304,16777216).")
    long[] sizes = {4 * KIB, 64 * KIB, 1024 * KIB, 4096 * KIB, 16384 * KIB};

    @Option(names = "--json", description = "Print JSON.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
            throws Exception
    {
        if (ranks < 2 || ranks > TensorShard.MAX_SIZE) {
            throw new IllegalArgumentException("--tensor-parallel must be in 2.." + TensorShard.MAX_SIZE + ", was " + ranks);
        }
        for (long size : sizes) {
            if (size < 64 || size > (256L << 20) || size % 4 != 0) {
                throw new IllegalArgumentException("--sizes must be multiples of 4 bytes from 64 B to 256 MiB, got " + size);
            }
        }
        // about 256 MiB moved per size, from 20 to 5000 calls
        int[] rounds = Arrays.stream(sizes).mapToInt(size -> (int) Math.clamp((256L << 20) / size, 20, 5000)).toArray();
        int[] warmups = Arrays.stream(rounds).map(r -> Math.max(10, r / 4)).toArray();
        String spec = join(sizes) + ":" + join(Arrays.stream(warmups).asLongStream().toArray()) + ":" + join(Arrays.stream(rounds).asLongStream().toArray());
        LocalRanks launcher = new LocalRanks("handoff.core", RankWorkerMain.class.getName(),
                (rank, leader) -> List.of("--rank", Integer.toString(rank), "--leader", leader, "--collective-bench", spec));
        long[] nanos;
        boolean[] shared = new boolean[sizes.length];
        try (RankGroup group = RankGroup.start(new RankGroup.Settings(ranks, "127.0.0.1", 0, ClusterSecurity.loopbackOnly(), Duration.ofSeconds(120), Duration.ofSeconds(60),
                Duration.ofSeconds(60), CollectiveBench.maxFrameBytes(sizes), CollectiveBench.IDENTITY, 1, java.util.Optional.empty()), launcher)) {
            for (int i = 0; i < sizes.length; i++) {
                int floats = (int) (sizes[i] / 4);
                shared[i] = group.sharesMemory(Pieces.columns(1, floats, 0, group.shard().bounds(floats, 16)));
            }
            nanos = CollectiveBench.run(group, sizes, warmups, rounds);
        }
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ArrayNode rows = mapper.createArrayNode();
        for (int i = 0; i < sizes.length; i++) {
            double seconds = nanos[i] / 1e9 / rounds[i];
            double memcpy = memcpySeconds(sizes[i], rounds[i]);
            ObjectNode row = rows.addObject();
            row.put("ranks", ranks);
            row.put("bytes", sizes[i]);
            row.put("path", shared[i] ? "shared_memory" : "links");
            row.put("rounds", rounds[i]);
            row.put("microseconds_per_call", Math.round(seconds * 1e7) / 10.0);
            row.put("gb_per_s", Math.round(sizes[i] / seconds / 1e7) / 100.0);
            row.put("memcpy_gb_per_s", Math.round(sizes[i] / memcpy / 1e7) / 100.0);
            row.put("ratio_to_memcpy", Math.round(memcpy / seconds * 100) / 100.0);
        }
        PrintWriter out = this.spec.commandLine().getOut();
        if (json) {
            out.println(mapper.writeValueAsString(rows));
            return 0;
        }
        out.printf("%d ranks (processes on this host), all-gather of the whole array, each rank owning 1/%d of it%n", ranks, ranks);
        out.printf("%10s %14s %10s %8s %12s %8s%n", "bytes", "path", "us/call", "GB/s", "memcpy GB/s", "ratio");
        rows.forEach(r -> out.printf("%10d %14s %10.1f %8.2f %12.2f %8.2f%n", r.get("bytes").asLong(), r.get("path").asText(),
                r.get("microseconds_per_call").asDouble(), r.get("gb_per_s").asDouble(), r.get("memcpy_gb_per_s").asDouble(),
                r.get("ratio_to_memcpy").asDouble()));
        out.println("GB/s: the gathered array's bytes per call; memcpy: one thread copying the same bytes, in this run.");
        return 0;
    }

    private static String join(long[] values)
    {
        return Arrays.stream(values).mapToObj(Long::toString).collect(Collectors.joining(","));
    }

    /** Seconds per copy of {@code bytes} by one thread (the best of three timings of {@code rounds} copies). */
    private static double memcpySeconds(long bytes, int rounds)
    {
        float[] from = new float[(int) (bytes / 4)];
        float[] to = new float[from.length];
        Arrays.fill(from, 1f);
        double best = Double.MAX_VALUE;
        for (int attempt = 0; attempt < 3; attempt++) {
            long start = System.nanoTime();
            for (int r = 0; r < rounds; r++) {
                System.arraycopy(from, 0, to, 0, from.length);
                from[r % from.length] = to[(r + 1) % to.length];
            }
            best = Math.min(best, (System.nanoTime() - start) / 1e9 / rounds);
        }
        return best;
    }
}
