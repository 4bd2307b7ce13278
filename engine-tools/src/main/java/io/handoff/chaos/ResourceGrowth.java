package io.handoff.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Whether a soak's processes grew after warm-up: each process's last sample against the one a quarter of the way in (the
 * warm-up: pools filled, JIT done). Growth beyond these thresholds fails the soak, since a long run would only grow
 * further: more than {@value #THREADS} threads, more than {@value #FDS} open file descriptors, or heap in use after
 * collection grown by more than half and by more than {@value #HEAP_MIB} MiB. A process killed and restarted during the
 * soak starts afresh, so a killing soak is not judged by it.
 */
final class ResourceGrowth
{
    static final int THREADS = 8;
    static final int FDS = 16;
    static final long HEAP_MIB = 128;
    /** Samples a process needs before growth can be judged. */
    static final int MIN_SAMPLES = 6;

    private ResourceGrowth() {}

    /** What grew beyond the thresholds, one line per process and figure; empty when nothing did. */
    static List<String> findings(Map<String, List<ResourceSample>> resources)
    {
        List<String> findings = new ArrayList<>();
        resources.forEach((process, samples) -> {
            if (samples.size() < MIN_SAMPLES) {
                return;
            }
            ResourceSample warm = samples.get(samples.size() / 4);
            ResourceSample end = samples.getLast();
            if (warm.threads() >= 0 && end.threads() > warm.threads() + THREADS) {
                findings.add(process + ": threads grew from " + warm.threads() + " to " + end.threads() + " after warm-up (more than " + THREADS + ")");
            }
            if (warm.fds() >= 0 && end.fds() > warm.fds() + FDS) {
                findings.add(process + ": open file descriptors grew from " + warm.fds() + " to " + end.fds() + " after warm-up (more than " + FDS + ")");
            }
            long heapGrowth = end.heapUsedBytes() - warm.heapUsedBytes();
            if (warm.heapUsedBytes() > 0 && heapGrowth > warm.heapUsedBytes() / 2 && heapGrowth > HEAP_MIB << 20) {
                findings.add(process + ": heap in use after collection grew from " + (warm.heapUsedBytes() >> 20) + " MiB to "
                        + (end.heapUsedBytes() >> 20) + " MiB after warm-up");
            }
        });
        return findings;
    }
}
