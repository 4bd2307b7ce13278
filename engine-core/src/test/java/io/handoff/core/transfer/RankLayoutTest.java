package io.handoff.core.transfer;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.SliceMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The slice maps between tensor-parallel layouts of one model, over real memory: every receiving rank ends up holding
 * exactly its KV heads (a replicated head on each of its holders), no other byte of the receiver is written, and the
 * canonical checksum of a page is the same on both sides whatever the two layouts, and catches a torn replica.
 */
class RankLayoutTest
{
    private static final int PAGES = 5;
    private static final int PAGE_SIZE = 4;
    // two layers, key and value: four region kinds, heads of 8 bytes (keys) and 12 bytes (values)
    private static final long[] HEAD_BYTES = {8, 12, 8, 12};

    /** One server's pools: every rank's regions, rank by rank, filled from the model's KV ({@code kv}) for the heads each holds. */
    private record Server(RankLayout layout, List<MemoryRegion> regions, MemorySegment[] segments) {}

    @ParameterizedTest(name = "{0} KV heads{3}: {1} ranks to {2}")
    @CsvSource({
            "4, 1, 2, ''", "4, 2, 1, ''", "4, 2, 4, ''", "4, 4, 2, ''", "4, 1, 4, ''", "4, 4, 1, ''", "4, 2, 2, ''",
            "2, 2, 4, ''", "2, 4, 2, ''", "2, 1, 4, ''", "2, 4, 1, ''",
            "1, 2, 4, ' (MLA)'", "1, 1, 2, ' (MLA)'", "1, 4, 1, ' (MLA)'"})
    void eachReceivingRankGetsExactlyItsHeadsAndTheChecksumsAgree(int kvHeads, int senderRanks, int receiverRanks, String mla)
    {
        boolean latent = !mla.isEmpty();
        try (Arena arena = Arena.ofConfined()) {
            byte[][][] kv = modelKv(kvHeads);
            Server sender = server(arena, senderRanks, kvHeads, latent, kv);
            Server receiver = server(arena, receiverRanks, kvHeads, latent, null);
            SliceMap slices = sender.layout().slicesTo(receiver.layout());

            // pages 1 and 2 to 3 and 0; the others stay as they were (zero)
            slices.copy(sender.segments(), receiver.segments(), 1, 3, 1);
            slices.copy(sender.segments(), receiver.segments(), 2, 0, 1);

            for (int rank = 0; rank < receiverRanks; rank++) {
                for (int k = 0; k < HEAD_BYTES.length; k++) {
                    MemorySegment region = receiver.segments()[rank * HEAD_BYTES.length + k];
                    assertThat(pageBytes(region, k, 3, receiver.layout(), rank)).isEqualTo(expected(kv, k, 1, receiver.layout(), rank));
                    assertThat(pageBytes(region, k, 0, receiver.layout(), rank)).isEqualTo(expected(kv, k, 2, receiver.layout(), rank));
                    for (int page : new int[] {1, 2, 4}) {
                        assertThat(pageBytes(region, k, page, receiver.layout(), rank)).as("page %d was not planned", page)
                                .containsOnly((byte) 0);
                    }
                }
            }
            assertThat(receiver.layout().checksum(receiver.regions(), 3, 0)).isEqualTo(sender.layout().checksum(sender.regions(), 1, 0));
            for (int replica = 0; replica < receiver.layout().replicas(); replica++) {
                assertThat(receiver.layout().checksum(receiver.regions(), 0, replica)).isEqualTo(sender.layout().checksum(sender.regions(), 2, 0));
            }
            long moved = slices.bytesPerPage();
            long kept = 0;
            for (MemoryRegion region : receiver.regions()) {
                kept += region.pageStride();
            }
            assertThat(moved).as("a receiver gets each byte it keeps once, and no other").isEqualTo(kept);

            // a torn byte in the last replica of a head changes the page's checksum in that replica's reading
            int last = receiver.layout().replicas() - 1;
            MemorySegment torn = receiver.segments()[(receiverRanks - 1) * HEAD_BYTES.length + 1];
            long at = 3 * (torn.byteSize() / PAGES) + 1;
            torn.set(ValueLayout.JAVA_BYTE, at, (byte) (torn.get(ValueLayout.JAVA_BYTE, at) ^ 1));
            assertThat(receiver.layout().checksum(receiver.regions(), 3, last)).isNotEqualTo(sender.layout().checksum(sender.regions(), 1, 0));
        }
    }

    @Test
    void layoutsOfDifferentKvDoNotPair()
    {
        RankLayout four = new RankLayout(2, 4, false, PAGE_SIZE, HEAD_BYTES);
        assertThatThrownBy(() -> four.slicesTo(new RankLayout(2, 2, false, PAGE_SIZE, HEAD_BYTES))).hasMessageContaining("different KV");
        assertThatThrownBy(() -> four.slicesTo(new RankLayout(2, 4, false, 8, HEAD_BYTES))).hasMessageContaining("different KV");
        assertThat(four.slicesTo(four.withRanks(2)).isIdentity()).isTrue();
        assertThat(four.slicesTo(four.withRanks(1)).isIdentity()).isFalse();
    }

    /** The model's KV of every page: per region kind, page, slot and head, the head's bytes; seeded. */
    private static byte[][][] modelKv(int heads)
    {
        SplittableRandom random = new SplittableRandom(7);
        byte[][][] kv = new byte[HEAD_BYTES.length][PAGES * PAGE_SIZE][];
        for (int k = 0; k < HEAD_BYTES.length; k++) {
            for (int slot = 0; slot < PAGES * PAGE_SIZE; slot++) {
                kv[k][slot] = new byte[Math.toIntExact(heads * HEAD_BYTES[k])];
                random.nextBytes(kv[k][slot]);
            }
        }
        return kv;
    }

    /** A server's pools; filled with the heads each rank holds when {@code kv} is given, zero otherwise. */
    private static Server server(Arena arena, int ranks, int kvHeads, boolean latent, byte[][][] kv)
    {
        RankLayout layout = new RankLayout(ranks, kvHeads, latent, PAGE_SIZE, HEAD_BYTES);
        List<MemoryRegion> regions = new ArrayList<>();
        MemorySegment[] segments = new MemorySegment[ranks * HEAD_BYTES.length];
        for (int rank = 0; rank < ranks; rank++) {
            int held = layout.headCount(rank);
            for (int k = 0; k < HEAD_BYTES.length; k++) {
                long row = held * HEAD_BYTES[k];
                MemorySegment segment = arena.allocate(PAGES * PAGE_SIZE * row);
                if (kv != null) {
                    for (int slot = 0; slot < PAGES * PAGE_SIZE; slot++) {
                        MemorySegment.copy(MemorySegment.ofArray(kv[k][slot]), layout.firstHead(rank) * HEAD_BYTES[k], segment, slot * row, row);
                    }
                }
                int index = regions.size();
                segments[index] = segment;
                regions.add(new MemoryRegion(index, segment, PAGE_SIZE * row, -1));
            }
        }
        assertThat(RankLayout.of(ranks, kvHeads, latent, PAGE_SIZE, regions)).isEqualTo(layout);
        return new Server(layout, regions, segments);
    }

    private static byte[] pageBytes(MemorySegment region, int k, int page, RankLayout layout, int rank)
    {
        long stride = PAGE_SIZE * layout.headCount(rank) * HEAD_BYTES[k];
        return region.asSlice(page * stride, stride).toArray(ValueLayout.JAVA_BYTE);
    }

    /** What rank {@code rank} of {@code layout} holds of the model's page {@code page} in region kind {@code k}. */
    private static byte[] expected(byte[][][] kv, int k, int page, RankLayout layout, int rank)
    {
        int row = Math.toIntExact(layout.headCount(rank) * HEAD_BYTES[k]);
        byte[] bytes = new byte[PAGE_SIZE * row];
        for (int slot = 0; slot < PAGE_SIZE; slot++) {
            System.arraycopy(kv[k][page * PAGE_SIZE + slot], Math.toIntExact(layout.firstHead(rank) * HEAD_BYTES[k]), bytes, slot * row, row);
        }
        return bytes;
    }
}
