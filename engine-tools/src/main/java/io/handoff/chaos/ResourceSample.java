package io.handoff.chaos;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.demo.NodeMetrics;
import io.handoff.demo.PrometheusSamples;
import io.handoff.http.base.ProcessMetrics;

import java.util.Map;
import java.util.OptionalDouble;

/**
 * What one process held at one moment of a soak, from its {@code /metrics}: resident memory, heap in use after the last
 * collection, off-heap buffers, threads, open file descriptors, and (on a prefill or decode) free and quarantined KV
 * pages. A figure the process does not export is -1.
 *
 * @param seconds since the soak's traffic began
 */
record ResourceSample(double seconds, long rssBytes, long heapUsedBytes, long offHeapBytes, long threads, long fds, long freePages,
        long quarantinedPages)
{
    static ResourceSample of(double seconds, PrometheusSamples samples)
    {
        return new ResourceSample(seconds, value(samples.value(ProcessMetrics.RESIDENT_BYTES)), value(samples.value(ProcessMetrics.HEAP_AFTER_GC_BYTES)),
                value(samples.value(ProcessMetrics.OFF_HEAP_BYTES)), value(samples.value(ProcessMetrics.THREADS)),
                value(samples.value(ProcessMetrics.OPEN_FDS)), value(samples.value(NodeMetrics.PAGES, Map.of("state", "free"))),
                value(samples.value(NodeMetrics.PAGES, Map.of("state", "quarantined"))));
    }

    private static long value(OptionalDouble value)
    {
        return value.isPresent() ? Math.round(value.getAsDouble()) : -1;
    }

    void writeTo(ObjectNode json)
    {
        json.put("t_s", Math.round(seconds * 10) / 10.0);
        json.put("rss_bytes", rssBytes);
        json.put("heap_used_bytes", heapUsedBytes);
        json.put("offheap_bytes", offHeapBytes);
        json.put("threads", threads);
        json.put("fds", fds);
        json.put("free_pages", freePages);
        json.put("quarantined_pages", quarantinedPages);
    }
}
