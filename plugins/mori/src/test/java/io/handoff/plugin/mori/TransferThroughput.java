package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferListener;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static java.nio.file.StandardOpenOption.CREATE_NEW;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * A rough measurement, not a test: GB/s of mori's shared-memory path with 1 MiB of pages per plan (4 regions
 * of 32 KiB pages, 8 pages per plan in two runs), against a plain 1 MiB MemorySegment.copy in the same run.
 * Run: java --enable-native-access=ALL-UNNAMED -cp plugins/mori/target/classes:plugins/mori/target/test-classes:engine-core/target/classes
 * io.handoff.plugin.mori.TransferThroughput [plans]
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
        int plans = args.length > 0 ? Integer.parseInt(args[0]) : 4000;
        Path shm = Path.of("/dev/shm");
        Path folder = Files.createTempDirectory(Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir")), "mori-bench");
        System.out.printf("memcpy 1MiB: %.2f GB/s%n", memcpy(plans));
        for (String forwardSync : List.of(System.getProperty("order", "true,false").split(","))) {
            for (int round = 0; round < 2; round++) {
                Path file = folder.resolve("pool-" + forwardSync + round);
                System.out.printf("mori shm forward-sync=%s (round %d): %.2f GB/s%n", forwardSync, round, transfer(forwardSync, file, plans));
                Files.delete(file);
            }
        }
        Files.delete(folder);
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

    private static double transfer(String forwardSync, Path file, int plans)
            throws Exception
    {
        MoriConfig config = MoriConfig.from(TestSettings.with("forward-sync", forwardSync));
        try (Arena arena = Arena.ofShared();
                MoriBackend receiver = new MoriBackend(new TestContext("host", file.getParent()), config, RdmaTransport.probe());
                MoriBackend sender = new MoriBackend(new TestContext("host", file.getParent(), new NoEvents()), config, RdmaTransport.probe())) {
            List<MemoryRegion> sources = new ArrayList<>();
            List<MemoryRegion> destinations = new ArrayList<>();
            try (FileChannel channel = FileChannel.open(file, CREATE_NEW, READ, WRITE)) {
                for (int i = 0; i < REGIONS; i++) {
                    sources.add(new MemoryRegion(i, arena.allocate(PAGES * STRIDE, 4096).fill((byte) i), STRIDE, -1));
                    long offset = i * PAGES * STRIDE;
                    destinations.add(new MemoryRegion(i, channel.map(FileChannel.MapMode.READ_WRITE, offset, PAGES * STRIDE, arena), STRIDE, offset));
                }
            }
            byte[] descriptor = receiver.expose(destinations, file, WriteGuard.ALLOW_ALL);
            sender.registerSources(sources);
            TransferPeer peer = sender.connect("host", descriptor);
            long bytes = PAGES_PER_PLAN * STRIDE * REGIONS;
            CountDownLatch done = new CountDownLatch(plans);
            AtomicReference<String> failure = new AtomicReference<>();
            TransferListener listener = new TransferListener()
            {
                @Override
                public void completed(TransferPlan plan, long written)
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
            long start = System.nanoTime();
            for (int i = 0; i < plans; i++) {
                int page = (i * PAGES_PER_PLAN) % PAGES;
                peer.post(new TransferPlan(new RoomKey(i, 0), 0, 0, new int[] {page, page + 4}, new int[] {page, page + 4},
                        new int[] {4, 4}, ProducerFence.DONE), listener);
            }
            if (!done.await(10, TimeUnit.MINUTES) || failure.get() != null) {
                throw new IllegalStateException("mori failed: " + (failure.get() != null ? failure.get() : "timeout"));
            }
            return plans * (double) bytes / (System.nanoTime() - start);
        }
    }

    /** An event list that keeps nothing, so the hooks cost what they cost in production (almost nothing). */
    private static final class NoEvents
            extends java.util.AbstractList<String>
    {
        @Override
        public boolean add(String event)
        {
            return true;
        }

        @Override
        public String get(int index)
        {
            throw new IndexOutOfBoundsException(index);
        }

        @Override
        public int size()
        {
            return 0;
        }
    }
}
