package io.handoff.bench.transfer;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The payload of bench transfer: sizes, its shape, the scattered mapping, the plans of a round, and the check of what landed. */
class PayloadTest
{
    @Test
    void sizesTakeBinaryUnitsAndPrintTheLargestExactOne()
    {
        assertThat(ByteSize.parse("--bytes", "256MiB")).isEqualTo(256L << 20);
        assertThat(ByteSize.parse("--bytes", "64kib")).isEqualTo(64L << 10);
        assertThat(ByteSize.parse("--bytes", "1G")).isEqualTo(1L << 30);
        assertThat(ByteSize.parse("--bytes", "4096")).isEqualTo(4096);
        assertThat(ByteSize.format(64L << 10)).isEqualTo("64KiB");
        assertThat(ByteSize.format(3L << 30)).isEqualTo("3GiB");
        assertThat(ByteSize.format(1000)).isEqualTo("1000B");
        assertThatThrownBy(() -> ByteSize.parse("--page-bytes", "64 KB/s")).hasMessageContaining("--page-bytes '64 KB/s' is not a size");
        assertThatThrownBy(() -> ByteSize.parse("--bytes", "0")).hasMessageContaining("must be positive");
    }

    @Test
    void bytesThatAreNotWholePagesOfTheShapeAreRefusedWithSizesThatFit()
    {
        assertThatThrownBy(() -> new PayloadShape((1L << 20) + 5, 64 << 10, 8))
                .hasMessageContaining("a page is 64KiB in each of 2 x 8 regions = 1MiB")
                .hasMessageContaining("--bytes 1MiB or --bytes 2MiB fits");
        assertThatThrownBy(() -> new PayloadShape(1L << 20, 1000, 8)).hasMessageContaining("--page-bytes 1000B is not a whole number of 64-byte units");
        assertThatThrownBy(() -> new PayloadShape(1L << 20, 64 << 10, 0)).hasMessageContaining("--layers must be 1..1024");
    }

    @Test
    void theShapeIsKAndVRegionsPerLayerWithPagesOfExactlyThePageBytes()
    {
        PayloadShape shape = new PayloadShape(256L << 20, 64 << 10, 8);

        assertThat(shape.regions()).isEqualTo(16);
        assertThat(shape.pages()).isEqualTo(256);
        assertThat(shape.geometry().regions()).isEqualTo(16);
        assertThat(shape.geometry().keyPageStride()).isEqualTo(64 << 10);
        assertThat(shape.geometry().valuePageStride()).isEqualTo(64 << 10);
        assertThat(shape.geometry().footprintBytes(shape.pages())).isEqualTo(256L << 20);
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 5, 7, 16, 255, 4096})
    void aScatteredMappingIsAPermutationWithNoTwoNeighboursAdjacent(int pages)
    {
        for (long seed = 0; seed < 20; seed++) {
            int[] destinations = PageMapping.scattered(pages, seed).destinations();
            assertThat(Arrays.stream(destinations).sorted().toArray()).isEqualTo(PageMapping.contiguous(pages).destinations());
            for (int i = 1; i < pages; i++) {
                assertThat(Math.abs(destinations[i] - destinations[i - 1])).as("pages %d and %d, seed %d", i - 1, i, seed).isNotEqualTo(1);
            }
        }
        assertThat(PageMapping.scattered(pages, 3).destinations()).isEqualTo(PageMapping.scattered(pages, 3).destinations());
    }

    @Test
    void tooFewPagesToScatterAreRefused()
    {
        assertThatThrownBy(() -> PageMapping.scattered(3, 1)).hasMessageContaining("--scatter needs at least 4 pages per region");
    }

    @Test
    void scatteredRoundsAreSinglePageRunsAndContiguousRoundsOneRunPerPlan()
    {
        RoundPlans scattered = new RoundPlans(PageMapping.scattered(600, 1), 256, 16, 4096);
        RoundPlans contiguous = new RoundPlans(PageMapping.contiguous(600), 256, 16, 4096);

        assertThat(scattered.plans(1)).hasSize(3).allSatisfy(plan -> assertThat(plan.runs()).isEqualTo(plan.pages()));
        assertThat(contiguous.plans(1)).hasSize(3).allSatisfy(plan -> assertThat(plan.runs()).isEqualTo(1));
        assertThat(scattered.plans(1).stream().mapToInt(TransferPlan::pages).sum()).isEqualTo(600);
        assertThat(scattered.plansPerRound()).isEqualTo(3);
        assertThat(scattered.planBytes()).isEqualTo(256L * 16 * 4096);
        assertThat(scattered.meanPieceBytes()).isEqualTo(4096);
        assertThat(contiguous.meanPieceBytes()).isEqualTo(200 * 4096);
        assertThat(scattered.plans(1).getFirst().room()).isNotEqualTo(scattered.plans(2).getFirst().room());
    }

    @Test
    void theMemcpyReferenceLeavesExactlyTheChecksumsTheReceiverMustShow()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> sources = regions(arena, 4, 64, 256);
            List<MemoryRegion> destinations = regions(arena, 4, 64, 256);
            PoolPattern.fill(sources, 7);
            PageMapping mapping = PageMapping.scattered(64, 7);
            RoundPlans plans = new RoundPlans(mapping, 16, 4, 256);

            long copied = new MemcpyReference(sources, destinations).copy(plans.plans(1));

            assertThat(copied).isEqualTo(plans.roundBytes());
            String expected = PoolPattern.expected(sources, mapping.sources());
            assertThat(PoolPattern.checksums(destinations)).isEqualTo(expected);
            assertThat(PoolPattern.checksums(sources)).as("scattered pages are not where they were").isNotEqualTo(expected);
        }
    }

    @Test
    void oneFlippedByteOrOneMisplacedPageChangesTheChecksumOfItsRegion()
    {
        try (Arena arena = Arena.ofConfined()) {
            List<MemoryRegion> sources = regions(arena, 3, 8, 128);
            PoolPattern.fill(sources, 1);
            int[] identity = PageMapping.contiguous(8).destinations();
            String expected = PoolPattern.expected(sources, identity);
            assertThat(PoolPattern.checksums(sources)).isEqualTo(expected);

            MemorySegment region1 = sources.get(1).segment();
            region1.set(ValueLayout.JAVA_BYTE, 300, (byte) ~region1.get(ValueLayout.JAVA_BYTE, 300));
            assertThat(PoolPattern.differences(expected, PoolPattern.checksums(sources))).isEqualTo("regions 1 differ");

            int[] swapped = identity.clone();
            swapped[2] = 3;
            swapped[3] = 2;
            assertThat(PoolPattern.differences(expected, PoolPattern.expected(sources, swapped))).isEqualTo("regions 0, 1, 2 differ");
        }
    }

    @Test
    void theBandwidthIsTheOverallColumnOfUcxPerftestsFinalLine()
    {
        String output = """
                +--------------+--------------+------------------------------+---------------------+-----------------------+
                |     Test     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |
                +--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
                                        2000     15.074   400.080   615.617      156.22     101.52        2500        1624
                """;

        assertThat(UcxPerftest.overallBandwidth(output)).isEqualTo(101.52);
        assertThat(UcxPerftest.overallBandwidth("connect failed\n")).isNull();
    }

    private static List<MemoryRegion> regions(Arena arena, int count, int pages, long stride)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            regions.add(new MemoryRegion(i, arena.allocate(pages * stride, 64), stride, -1));
        }
        return regions;
    }
}
