package io.handoff.spi.transfer;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a sender checks of a receiver's regions before a plan's page numbers may travel between them. */
class PageGeometryTest
{
    @Test
    void ofRegionsKeepsTheirStridesAndTheSmallestPageCount()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> regions = List.of(new MemoryRegion(0, arena.allocate(10 * 64), 64, -1),
                    new MemoryRegion(1, arena.allocate(6 * 128), 128, -1));

            assertThat(PageGeometry.of(regions)).isEqualTo(new PageGeometry(List.of(64L, 128L), 6));
        }
    }

    @Test
    void ofRefusesRegionsThatDoNotStandAtTheirIndex()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> reversed = List.of(new MemoryRegion(1, arena.allocate(64), 64, -1), new MemoryRegion(0, arena.allocate(64), 64, -1));

            assertThatThrownBy(() -> PageGeometry.of(reversed)).hasMessage("region at position 0 has index 1");
        }
    }

    @Test
    void aReceiverWithOtherRegionsOrStridesIsRefusedNamingTheBackend()
    {
        PageGeometry sender = new PageGeometry(List.of(64L, 128L), 8);

        sender.checkReceiver("example", new PageGeometry(List.of(64L, 128L), 3));
        assertThatThrownBy(() -> sender.checkReceiver("example", new PageGeometry(List.of(64L), 8)))
                .hasMessage("example: the receiver exposed 1 regions, this sender has 2; both sides must serve the same model and KV layout");
        assertThatThrownBy(() -> sender.checkReceiver("example", new PageGeometry(List.of(64L, 256L), 8)))
                .hasMessage("example: region 1 has 256-byte pages on the receiver and 128-byte pages here; "
                        + "both sides must use the same page size and dtype");
    }
}
