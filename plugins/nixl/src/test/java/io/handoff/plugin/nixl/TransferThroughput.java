package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A rough measurement, not a test: GB/s of nixl transfers with 1 MiB of pages per plan (4 regions of 32 KiB pages,
 * 8 pages per plan in two runs), per UCX transport list, against a plain 1 MiB MemorySegment.copy in the same run.
 * Both backends live in this JVM. Run (with UCX_ERROR_SIGNALS= in the environment):
 * java --enable-native-access=ALL-UNNAMED -cp plugins/nixl/target/classes:plugins/nixl/target/test-classes:engine-core/target/classes
 * io.handoff.plugin.nixl.TransferThroughput [plans] [tls...]
 */
public final class TransferThroughput
{
    private static final int REGIONS = 4;
    private static final long STRIDE = 32 * 1024;
    private static final int PAGES = 512;
    private static final int PAGES_PER_PLAN = 8;

    private TransferThroughput() {}

    public static void main(String[] args)
            throws Exception
    {
        int plans = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        List<String> transports = args.length > 1 ? List.of(args).subList(1, args.length) : List.of("tcp", "posix,self", "sysv,self", "");
        System.out.printf("memcpy 1MiB: %.2f GB/s%n", memcpy(plans));
        for (String tls : transports) {
            for (int round = 0; round < 2; round++) {
                System.out.printf("nixl %s (round %d): %.2f GB/s%n", tls.isEmpty() ? "<UCX default>" : tls, round, transfer(tls, plans));
            }
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
                long offset = (i * bytes) % (source.byteSize() - bytes);
                MemorySegment.copy(source, offset, destination, offset, bytes);
            }
            return (double) plans * bytes / (System.nanoTime() - start);
        }
    }

    private static double transfer(String tls, int plans)
            throws Exception
    {
        PluginSettings settings = TestSettings.with("tls", tls);
        try (Arena arena = Arena.ofShared()) {
            TransferBackend receiver = new NixlProvider().open(new TestContext("decode"), settings);
            TransferBackend sender = new NixlProvider().open(new TestContext("prefill"), settings);
            try {
                List<MemoryRegion> source = regions(arena);
                List<MemoryRegion> destination = regions(arena);
                sender.registerSources(source);
                TransferPeer peer = sender.connect("decode", receiver.expose(destination, null, WriteGuard.ALLOW_ALL));
                RoomKey room = new RoomKey(1, 0);
                // Warm-up: wire-up and first touches.
                run(peer, room, 50);
                long bytes = PAGES_PER_PLAN * STRIDE * REGIONS;
                long start = System.nanoTime();
                run(peer, room, plans);
                return (double) plans * bytes / (System.nanoTime() - start);
            }
            finally {
                sender.close();
                receiver.close();
            }
        }
    }

    private static void run(TransferPeer peer, RoomKey room, int plans)
            throws InterruptedException
    {
        CountDownLatch done = new CountDownLatch(plans);
        List<String> failures = new ArrayList<>();
        TransferListener listener = new TransferListener()
        {
            @Override
            public void completed(TransferPlan plan, long bytes)
            {
                done.countDown();
            }

            @Override
            public void failed(TransferPlan plan, String reason)
            {
                synchronized (failures) {
                    failures.add(reason);
                }
                done.countDown();
            }
        };
        for (int i = 0; i < plans; i++) {
            int base = (i * PAGES_PER_PLAN) % (PAGES - PAGES_PER_PLAN);
            int half = PAGES_PER_PLAN / 2;
            peer.post(new TransferPlan(room, i, base, new int[] {base, base + half}, new int[] {base, base + half}, new int[] {half, half},
                    ProducerFence.DONE), listener);
        }
        if (!done.await(10, TimeUnit.MINUTES) || !failures.isEmpty()) {
            throw new IllegalStateException("plans failed: " + failures.subList(0, Math.min(3, failures.size())));
        }
    }

    private static List<MemoryRegion> regions(Arena arena)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < REGIONS; i++) {
            regions.add(new MemoryRegion(i, arena.allocate(PAGES * STRIDE, 4096), STRIDE, -1));
        }
        return regions;
    }
}
