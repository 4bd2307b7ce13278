package io.handoff.testkit.transfer;

import io.handoff.core.transfer.PlanListener;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.PluginSettings;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A rough measurement, not a test: GB/s of one backend moving plans of 1 MiB (4 regions of 32 KiB pages, 8 pages
 * per plan in two runs) between two of its instances on one host, against a plain 1 MiB MemorySegment.copy in the
 * same run, and again with a cluster secret on both sides (a backend that tags its frames pays for it there). The
 * sender's peer is driven by the core's transfer link, as in the engine, and the hooks do nothing, as in production. Run it with the plugin, this kit, engine-core and engine-core's
 * dependencies on the class path (a plugin's test class path), naming the plugin and its settings:
 * <pre>
 * mvn dependency:build-classpath -pl plugins/mooncake -Dmdep.includeScope=test -Dmdep.outputFile=cp.txt
 * java --enable-native-access=ALL-UNNAMED -Dplans=4000 -cp plugins/mooncake/target/classes:$(cat cp.txt) \
 *     io.handoff.testkit.transfer.TransferThroughput mooncake transport=tcp
 * </pre>
 */
public final class TransferThroughput
{
    private static final int REGIONS = 4;
    private static final long STRIDE = 32 * 1024;
    private static final int PAGES = 512;
    private static final int PAGES_PER_PLAN = 8;
    private static final String HOST = "bench-host";

    private TransferThroughput() {}

    public static void main(String[] args)
            throws Exception
    {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: TransferThroughput <plugin id> [key=value ...] (and -Dplans=N)");
        }
        int plans = Integer.getInteger("plans", 4000);
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
        try {
            System.out.printf("memcpy 1MiB: %.2f GB/s%n", memcpy(plans));
            for (int round = 0; round < 2; round++) {
                for (boolean secret : new boolean[] {false, true}) {
                    Path file = folder.resolve("pool-" + round + "-" + secret);
                    System.out.printf("%s %s%s (round %d): %s%n", provider.id(), overrides, secret ? " with a cluster secret" : "", round,
                            transfer(provider, settings, file, plans, secret));
                    Files.deleteIfExists(file);
                }
            }
        }
        finally {
            Files.delete(folder);
        }
    }

    private static double memcpy(int plans)
    {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment source = arena.allocate(REGIONS * PAGES * STRIDE, 4096);
            MemorySegment destination = arena.allocate(REGIONS * PAGES * STRIDE, 4096);
            long bytes = PAGES_PER_PLAN * STRIDE * REGIONS;
            long start = System.nanoTime();
            for (int i = 0; i < plans; i++) {
                long offset = (i * bytes) % source.byteSize();
                MemorySegment.copy(source, offset, destination, offset, bytes);
            }
            return plans * (double) bytes / (System.nanoTime() - start);
        }
    }

    /** "N.NN GB/s over TRANSPORT". */
    private static String transfer(TransferBackendProvider provider, PluginSettings settings, Path file, int plans, boolean secret)
            throws InterruptedException, IOException
    {
        RecordingContext plain = new RecordingContext(HOST, file.getParent());
        TransferContext context = secret ? new ClusterContext(plain, Link.Wiring.SECRET, provider.id()) : plain;
        long[] strides = {STRIDE, STRIDE, STRIDE, STRIDE};
        try (TransferBackend receiver = provider.open(context, settings);
                TransferBackend sender = provider.open(context, settings);
                Pool source = Pool.anonymous(PAGES, strides);
                Pool destination = receiver.wantsSharedFileMemory() ? Pool.mapped(file, PAGES, strides) : Pool.anonymous(PAGES, strides)) {
            byte[] descriptor = receiver.expose(destination.regions(), destination.file(), WriteGuard.ALLOW_ALL);
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect(HOST, descriptor);
            try (TransferLink link = Link.start(provider.id(), HOST, peer, source.regions(), Link.TIMEOUTS, TransferHooks.NONE)) {
                long bytes = PAGES_PER_PLAN * STRIDE * REGIONS;
                long start = System.nanoTime();
                post(link, plans);
                return String.format("%.2f GB/s over %s", plans * (double) bytes / (System.nanoTime() - start), link.transport());
            }
        }
    }

    private static void post(TransferLink link, int plans)
            throws InterruptedException
    {
        CountDownLatch done = new CountDownLatch(plans);
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
        int half = PAGES_PER_PLAN / 2;
        for (int i = 0; i < plans; i++) {
            int page = (i * PAGES_PER_PLAN) % PAGES;
            link.post(new TransferPlan(new RoomKey(i, 0), 0, 0, new int[] {page, page + half}, new int[] {page, page + half},
                    new int[] {half, half}, ProducerFence.DONE), listener);
        }
        if (!done.await(10, TimeUnit.MINUTES) || failure.get() != null) {
            throw new IllegalStateException("plans failed: " + (failure.get() != null ? failure.get() : "not all heard within 10 minutes"));
        }
    }
}
