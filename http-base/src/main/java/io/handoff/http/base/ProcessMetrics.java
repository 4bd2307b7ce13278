package io.handoff.http.base;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.management.OperatingSystemMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What this process holds, for {@code /metrics} (the standard names where Prometheus has them): resident memory, heap
 * in use after the last collection, off-heap buffers, threads and open file descriptors. A soak samples them to show that
 * a long run does not grow; an operator alerts on them. A figure the platform does not give is left out, never 0.
 */
public final class ProcessMetrics
{
    public static final String RESIDENT_BYTES = "process_resident_memory_bytes";
    public static final String OPEN_FDS = "process_open_fds";
    public static final String THREADS = "handoff_process_threads";
    public static final String HEAP_AFTER_GC_BYTES = "handoff_jvm_heap_used_after_gc_bytes";
    public static final String OFF_HEAP_BYTES = "handoff_jvm_buffer_pool_bytes";

    private ProcessMetrics() {}

    public static void render(PrometheusText out)
    {
        long rss = residentBytes();
        if (rss >= 0) {
            out.gauge(RESIDENT_BYTES, "Resident memory of this process (VmRSS).", rss);
        }
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
            out.gauge(OPEN_FDS, "Open file descriptors of this process.", unix.getOpenFileDescriptorCount());
        }
        out.gauge(THREADS, "Live platform threads of this process (virtual threads are not counted).",
                ManagementFactory.getThreadMXBean().getThreadCount());
        out.gauge(HEAP_AFTER_GC_BYTES, "Heap in use right after the last garbage collection of each heap pool, summed: what a long run "
                + "keeps, without the garbage that comes and goes.", heapAfterGc());
        long buffers = 0;
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            buffers += Math.max(0, pool.getMemoryUsed());
        }
        out.gauge(OFF_HEAP_BYTES, "Direct and mapped NIO buffer memory of this process.", buffers);
    }

    // the heap pools' usage right after the most recent collection of any collector (young or old): everything live then
    private static long heapAfterGc()
    {
        com.sun.management.GcInfo latest = null;
        for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (collector instanceof com.sun.management.GarbageCollectorMXBean gc) {
                com.sun.management.GcInfo info = gc.getLastGcInfo();
                if (info != null && (latest == null || info.getEndTime() > latest.getEndTime())) {
                    latest = info;
                }
            }
        }
        if (latest == null) {
            // no collection yet: what the heap holds now
            return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        }
        long used = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            MemoryUsage after = latest.getMemoryUsageAfterGc().get(pool.getName());
            if (pool.getType() == MemoryType.HEAP && after != null) {
                used += after.getUsed();
            }
        }
        return used;
    }

    /** This process's resident memory (VmRSS of /proc/self/status), or -1 where there is none. */
    public static long residentBytes()
    {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String[] parts = line.substring(6).trim().split("\\s+");
                    return Long.parseLong(parts[0]) * 1024;
                }
            }
        }
        catch (IOException | RuntimeException e) {
            // not Linux, or not readable: the figure is left out
        }
        return -1;
    }
}
