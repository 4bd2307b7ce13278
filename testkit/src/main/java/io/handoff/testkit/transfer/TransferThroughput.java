package io.handoff.testkit.transfer;

import io.handoff.core.transfer.PlanListener;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A rough measurement, not a test: GB/s of one backend moving plans between two of its instances on one host,
 * against single-thread memcpy of the same bytes in the same pattern, in the same run (and again with a cluster
 * secret on both sides with {@code -Dsecret=true}: a backend that tags its frames pays for it there). The sender's
 * peer is driven by the core's transfer link, as in the engine, and the hooks do nothing, as in production. Run it
 * with the plugin, this kit, engine-core and engine-core's dependencies on the class path (the distribution's
 * {@code lib} holds all but the kit), naming the plugin and its settings:
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -Dplans=4000 -cp testkit/target/classes:dist/target/handoff/lib/'*' \
 *     io.handoff.testkit.transfer.TransferThroughput mooncake transport=tcp
 * </pre>
 * The shape, as system properties: {@code regions} (4), {@code page-bytes} (32768, each region's page stride),
 * {@code pool-pages} (512), {@code plan-pages} (8), {@code scatter} (false: a plan is one run of adjacent pages;
 * true: every page is a run of its own, source and destination pages in different shuffled orders, as a long-lived
 * pool hands them out), {@code window} (the link's plans in flight; 1), {@code rounds} (2), {@code first-touch}
 * (false: both pools are touched before the plans; true: the receiver's is not, as in a freshly started engine).
 */
public final class TransferThroughput
{
    private static final String HOST = "bench-host";
    // -Dfirst-touch=true: destinations are not touched before the plans (nor the memcpy's), as in a fresh engine's pool
    private static final boolean FIRST_TOUCH = Boolean.getBoolean("first-touch");

    /** The payload's shape: how many pages of which size, and how they are grouped into plans. */
    record Shape(int regions, long pageBytes, int poolPages, int planPages, boolean scatter, int window)
    {
        static Shape fromProperties()
        {
            Shape shape = new Shape(Integer.getInteger("regions", 4), Long.getLong("page-bytes", 32 * 1024), Integer.getInteger("pool-pages", 512),
                    Integer.getInteger("plan-pages", 8), Boolean.getBoolean("scatter"), Integer.getInteger("window", 1));
            if (shape.regions < 1 || shape.pageBytes < 1 || shape.planPages < 1 || shape.poolPages < shape.planPages || shape.window < 1) {
                throw new IllegalArgumentException("bad shape " + shape + ": regions, page-bytes, plan-pages and window must be at least 1, "
                        + "pool-pages at least plan-pages");
            }
            return shape;
        }

        long planBytes()
        {
            return planPages * pageBytes * regions;
        }

        long[] strides()
        {
            long[] strides = new long[regions];
            Arrays.fill(strides, pageBytes);
            return strides;
        }

        /** Page {@code i} of the pool's order: identity when not scattered, else a fixed shuffle (seeded). */
        int[] order(long seed)
        {
            int[] order = new int[poolPages];
            for (int i = 0; i < poolPages; i++) {
                order[i] = i;
            }
            if (scatter) {
                java.util.Random random = new java.util.Random(seed);
                for (int i = poolPages - 1; i > 0; i--) {
                    int j = random.nextInt(i + 1);
                    int t = order[i];
                    order[i] = order[j];
                    order[j] = t;
                }
            }
            return order;
        }
    }

    private TransferThroughput() {}

    public static void main(String[] args)
            throws Exception
    {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: TransferThroughput <plugin id> [key=value ...] (and -Dplans=N, -Dplan-pages=N, ...)");
        }
        int plans = Integer.getInteger("plans", 4000);
        int rounds = Integer.getInteger("rounds", 2);
        Shape shape = Shape.fromProperties();
        TransferBackendProvider provider = ServiceLoader.load(TransferBackendProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(candidate -> candidate.id().equals(args[0]))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no transfer backend '" + args[0] + "' on the class path"));
        Map<String, String> overrides = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            if (pair.length != 2) {
                throw new IllegalArgumentException("'" + args[i] + "' is not key=value");
            }
            overrides.put(pair[0], pair[1]);
        }
        PluginSettings settings = ReferenceSettings.of(provider).with(overrides);
        Path shm = Path.of("/dev/shm");
        Path folder = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "handoff-bench");
        System.out.printf("shape: %s, %d plans of %d KiB%n", shape, plans, shape.planBytes() / 1024);
        try {
            boolean[] secrets = Boolean.getBoolean("secret") ? new boolean[] {false, true} : new boolean[] {false};
            for (int round = 0; round < rounds; round++) {
                double memcpy = memcpy(shape, plans);
                for (boolean secret : secrets) {
                    Path file = folder.resolve("pool-" + round + "-" + secret);
                    Result result = transfer(provider, settings, shape, file, plans, secret);
                    System.out.printf("%s %s%s (round %d): %.2f GB/s over %s; memcpy %.2f GB/s; ratio %.2f%n", provider.id(), overrides,
                            secret ? " with a cluster secret" : "", round, result.gbps, result.transport, memcpy, result.gbps / memcpy);
                    Files.deleteIfExists(file);
                }
            }
        }
        finally {
            Files.delete(folder);
        }
    }

    private record Result(double gbps, String transport) {}

    /** Single-thread memcpy of the plans' bytes, page run by page run and region by region, as the plans lay them out. */
    private static double memcpy(Shape shape, int plans)
    {
        try (Arena arena = Arena.ofShared()) {
            long regionBytes = shape.poolPages * shape.pageBytes;
            MemorySegment[] sources = new MemorySegment[shape.regions];
            MemorySegment[] destinations = new MemorySegment[shape.regions];
            for (int r = 0; r < shape.regions; r++) {
                sources[r] = arena.allocate(regionBytes, 4096).fill((byte) 1);
                destinations[r] = arena.allocate(regionBytes, 4096);
                if (!FIRST_TOUCH) {
                    destinations[r].fill((byte) 0);
                }
            }
            List<TransferPlan> planned = plans(shape, plans);
            long start = System.nanoTime();
            for (TransferPlan plan : planned) {
                for (int run = 0; run < plan.runs(); run++) {
                    long bytes = plan.runLengths()[run] * shape.pageBytes;
                    for (int r = 0; r < shape.regions; r++) {
                        MemorySegment.copy(sources[r], plan.srcPages()[run] * shape.pageBytes, destinations[r], plan.dstPages()[run] * shape.pageBytes,
                                bytes);
                    }
                }
            }
            return plans * (double) shape.planBytes() / (System.nanoTime() - start);
        }
    }

    /** The plans, cycling through the pool: runs of adjacent pages, or one page per run in shuffled orders when scattered. */
    static List<TransferPlan> plans(Shape shape, int plans)
    {
        int[] sourceOrder = shape.order(1);
        int[] destinationOrder = shape.order(2);
        int perPool = shape.poolPages / shape.planPages;
        TransferPlan[] planned = new TransferPlan[plans];
        for (int i = 0; i < plans; i++) {
            int first = (i % perPool) * shape.planPages;
            int[] src;
            int[] dst;
            int[] lengths;
            if (shape.scatter) {
                src = Arrays.copyOfRange(sourceOrder, first, first + shape.planPages);
                dst = Arrays.copyOfRange(destinationOrder, first, first + shape.planPages);
                lengths = new int[shape.planPages];
                Arrays.fill(lengths, 1);
            }
            else {
                src = new int[] {first};
                dst = new int[] {first};
                lengths = new int[] {shape.planPages};
            }
            planned[i] = new TransferPlan(new RoomKey(i, 0), 0, 0, src, dst, lengths, ProducerFence.DONE);
        }
        return List.of(planned);
    }

    private static Result transfer(TransferBackendProvider provider, PluginSettings settings, Shape shape, Path file, int plans, boolean secret)
            throws InterruptedException, IOException
    {
        RecordingContext plain = new RecordingContext(HOST, file.getParent());
        TransferContext context = secret ? new ClusterContext(plain, Link.Wiring.SECRET, provider.id()) : plain;
        try (TransferBackend receiver = provider.open(context, settings);
                TransferBackend sender = provider.open(context, settings);
                Pool source = Pool.anonymous(shape.poolPages, shape.strides());
                Pool destination = receiver.wantsSharedFileMemory() ? Pool.mapped(file, shape.poolPages, shape.strides())
                        : Pool.anonymous(shape.poolPages, shape.strides())) {
            // touch both pools first, as the memcpy reference does: first-touch page faults are not the backend's
            for (MemoryRegion region : source.regions()) {
                region.segment().fill((byte) 1);
            }
            for (MemoryRegion region : destination.regions()) {
                if (!FIRST_TOUCH) {
                    region.segment().fill((byte) 0);
                }
            }
            byte[] descriptor = receiver.expose(destination.regions(), destination.file(), WriteGuard.ALLOW_ALL);
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect(HOST, descriptor);
            List<TransferPlan> planned = plans(shape, plans);
            try (TransferLink link = Link.start(provider.id(), HOST, peer, source.regions(), Link.TIMEOUTS, TransferHooks.NONE, shape.window)) {
                long start = System.nanoTime();
                post(link, planned);
                return new Result(plans * (double) shape.planBytes() / (System.nanoTime() - start), link.transport());
            }
        }
    }

    private static void post(TransferLink link, List<TransferPlan> plans)
            throws InterruptedException
    {
        CountDownLatch done = new CountDownLatch(plans.size());
        AtomicReference<String> failure = new AtomicReference<>();
        PlanListener listener = new PlanListener()
        {
            @Override
            public void completed(TransferPlan plan, long bytes)
            {
                done.countDown();
            }

            @Override
            public void failed(TransferPlan plan, String reason)
            {
                failure.compareAndSet(null, reason);
                done.countDown();
            }
        };
        for (TransferPlan plan : plans) {
            link.post(plan, listener);
        }
        if (!done.await(10, TimeUnit.MINUTES) || failure.get() != null) {
            throw new IllegalStateException("plans failed: " + (failure.get() != null ? failure.get() : "not all heard within 10 minutes"));
        }
    }
}
