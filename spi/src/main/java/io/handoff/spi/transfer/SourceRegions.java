package io.handoff.spi.transfer;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * A sender's regions as {@link TransferBackend#registerSources} received them, with their page geometry (which
 * also refuses regions out of index order), kept together so a backend never holds one without the other.
 */
public record SourceRegions(List<MemoryRegion> regions, PageGeometry geometry)
{
    public SourceRegions
    {
        regions = List.copyOf(requireNonNull(regions, "regions is null"));
        requireNonNull(geometry, "geometry is null");
    }

    public static SourceRegions of(List<MemoryRegion> regions)
    {
        return new SourceRegions(regions, PageGeometry.of(regions));
    }
}
