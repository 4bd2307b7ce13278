package io.handoff.bench.transfer;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferPlan;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The reference every transfer figure is divided by: one thread copying exactly the bytes a round's plans move,
 * run by run and region by region, from the same source pool into a destination of the same shape and the same
 * kind of memory (a shared file mapping when the backend's receiver uses one).
 */
record MemcpyReference(List<MemoryRegion> sources, List<MemoryRegion> destinations, SliceMap slices)
{
    MemcpyReference(List<MemoryRegion> sources, List<MemoryRegion> destinations)
    {
        this(sources, destinations, null);
    }

    /** Copies every plan (through the slice map, when there is one: a row's head slice at a time); returns the bytes copied. */
    long copy(List<TransferPlan> plans)
    {
        if (slices != null) {
            MemorySegment[] from = sources.stream().map(MemoryRegion::segment).toArray(MemorySegment[]::new);
            MemorySegment[] to = destinations.stream().map(MemoryRegion::segment).toArray(MemorySegment[]::new);
            long bytes = 0;
            for (TransferPlan plan : plans) {
                for (int run = 0; run < plan.runs(); run++) {
                    bytes += slices.copy(from, to, plan.srcPages()[run], plan.dstPages()[run], plan.runLengths()[run]);
                }
            }
            return bytes;
        }
        long bytes = 0;
        for (TransferPlan plan : plans) {
            int[] src = plan.srcPages();
            int[] dst = plan.dstPages();
            int[] lengths = plan.runLengths();
            for (int run = 0; run < lengths.length; run++) {
                for (int region = 0; region < sources.size(); region++) {
                    long stride = sources.get(region).pageStride();
                    long length = lengths[run] * stride;
                    MemorySegment.copy(sources.get(region).segment(), src[run] * stride, destinations.get(region).segment(), dst[run] * stride,
                            length);
                    bytes += length;
                }
            }
        }
        return bytes;
    }
}
