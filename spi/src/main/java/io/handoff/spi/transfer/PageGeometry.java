package io.handoff.spi.transfer;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One side's KV pool as a connection sees it: each region's page stride, in region order, and the number of
 * pages every region has (the smallest region's count). A plan names pages, not bytes, so a sender checks
 * that the receiver's strides equal its own before it connects, and checks each plan's runs against both
 * sides' page counts before it sends.
 */
public record PageGeometry(List<Long> pageStrides, int pages)
{
    public PageGeometry
    {
        pageStrides = List.copyOf(requireNonNull(pageStrides, "pageStrides is null"));
        for (long stride : pageStrides) {
            if (stride < 1) {
                throw new IllegalArgumentException("page stride " + stride + " is not positive");
            }
        }
        if (pages < 0) {
            throw new IllegalArgumentException("pages must be >= 0, was " + pages);
        }
    }

    /**
     * The geometry of these regions. Refuses regions that do not stand at their index: plans and descriptors
     * number regions by position, so a region out of place would receive another region's bytes.
     */
    public static PageGeometry of(List<MemoryRegion> regions)
    {
        requireNonNull(regions, "regions is null");
        for (int i = 0; i < regions.size(); i++) {
            if (regions.get(i).index() != i) {
                throw new IllegalArgumentException("region at position " + i + " has index " + regions.get(i).index());
            }
        }
        return new PageGeometry(regions.stream().map(MemoryRegion::pageStride).toList(),
                regions.stream().mapToInt(MemoryRegion::pages).min().orElse(0));
    }

    public int regions()
    {
        return pageStrides.size();
    }

    /**
     * Refuses a receiver whose regions differ from this sender's in number or page stride, where the same page
     * number would name different bytes on the two sides. {@code backend} starts the message (e.g. "mooncake").
     */
    public void checkReceiver(String backend, PageGeometry receiver)
    {
        requireNonNull(backend, "backend is null");
        requireNonNull(receiver, "receiver is null");
        if (receiver.regions() != regions()) {
            throw new IllegalArgumentException(backend + ": the receiver exposed " + receiver.regions() + " regions, this sender has "
                    + regions() + "; both sides must serve the same model and KV layout");
        }
        for (int i = 0; i < regions(); i++) {
            long remoteStride = receiver.pageStrides().get(i);
            if (remoteStride != pageStrides.get(i)) {
                throw new IllegalArgumentException(backend + ": region " + i + " has " + remoteStride + "-byte pages on the receiver and "
                        + pageStrides.get(i) + "-byte pages here; both sides must use the same page size and dtype");
            }
        }
    }
}
