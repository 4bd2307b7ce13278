package io.handoff.plugin.mooncake;

import io.handoff.spi.PluginSettings;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static java.nio.file.StandardOpenOption.CREATE_NEW;
import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;

/**
 * A rough measurement, not a test: GB/s of tcp and shm transfers with 1 MiB of pages per plan (4 regions of
 * 32 KiB pages, 8 pages per plan in two runs), against a plain 1 MiB MemorySegment.copy in the same run.
 * Run: java -cp plugins/mooncake/target/classes:plugins/mooncake/target/test-classes:engine-core/target/classes
 * io.handoff.plugin.mooncake.TransferThroughput [plans]
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
        Path folder = Files.createTempDirectory(Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : System.getProperty("java.io.tmpdir")), "mooncake-bench");
        System.out.printf("memcpy 1MiB: %.2f GB/s%n", memcpy(plans));
        for (String transport : List.of("tcp", "shm")) {
            for (int round = 0; round < 2; round++) {
                System.out.printf("%s (round %d): %.2f GB/s%n", transport, round, transfer(transport, folder.resolve(transport + round), plans));
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
                long offset = (i * bytes) % source.byteSize();
                MemorySegment.copy(source, offset, destination, offset, bytes);
            }
            return plans * (double) bytes / (System.nanoTime() - start);
        }
    }

    private static double transfer(String transport, Path file, int plans)
            throws Exception
    {
        PluginSettings settings = TestSettings.with("transport", transport, "socket-buffer-bytes", System.getProperty("sockbuf", "0"));
        try (Arena arena = Arena.ofShared();
                MooncakeBackend receiver = new MooncakeBackend(new TestContext("host", file.getParent()), MooncakeConfig.from(settings));
                MooncakeBackend sender = new MooncakeBackend(new TestContext("host", file.getParent()), MooncakeConfig.from(settings))) {
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
            Outcome failures = new Outcome();
            long start = System.nanoTime();
            for (int i = 0; i < plans; i++) {
                int page = (i * PAGES_PER_PLAN) % PAGES;
                TransferPlan plan = new TransferPlan(new RoomKey(i, 0), 0, 0, new int[] {page, page + 4}, new int[] {page, page + 4},
                        new int[] {4, 4}, ProducerFence.DONE);
                peer.post(plan, new io.handoff.spi.transfer.TransferListener()
                {
                    @Override
                    public void completed(TransferPlan plan, long written)
                    {
                        done.countDown();
                    }

                    @Override
                    public void failed(TransferPlan plan, String reason)
                    {
                        failures.failed(plan, reason);
                        done.countDown();
                    }
                });
            }
            if (!done.await(10, TimeUnit.MINUTES) || failures.isDone()) {
                throw new IllegalStateException(transport + " failed: " + (failures.isDone() ? failures.await().failure() : "timeout"));
            }
            double rate = plans * (double) bytes / (System.nanoTime() - start);
            if (!peer.transport().equals(transport)) {
                throw new IllegalStateException("expected " + transport + ", got " + peer.transport());
            }
            return rate;
        }
        finally {
            try {
                Files.deleteIfExists(file);
            }
            catch (IOException ignored) {
                // best effort
            }
        }
    }
}
