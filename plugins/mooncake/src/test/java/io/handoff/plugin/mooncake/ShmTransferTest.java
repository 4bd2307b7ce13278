package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static io.handoff.plugin.mooncake.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;

/** What only the shm transport does: one-sided writes straight into the receiver's mapped pages. */
class ShmTransferTest
{
    private static final RoomKey ROOM = new RoomKey(4, 2);

    @TempDir
    Path folder;

    @Test
    void eachPageIsInTheReceiversPoolWhenAfterPageIsCalled()
            throws Exception
    {
        try (Link link = Link.open(Transport.SHM, folder)) {
            List<Boolean> landed = new CopyOnWriteArrayList<>();
            // Room-relative page 10 + i is destination page 30 + i, source page 2 + i.
            link.senderContext.onAfterPage((room, page) -> landed.add(link.destination.holds(30 + page - 10, 2 + page - 10)));
            TransferPlan plan = plan(ROOM, 3, 10, ProducerFence.DONE, new int[] {2, 30, 9});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(landed).hasSize(9).containsOnly(true);
        }
    }

    @Test
    void theReceiverTakesNoPartSoItsGuardIsNeverAsked()
            throws Exception
    {
        List<String> asked = new CopyOnWriteArrayList<>();
        WriteGuard recording = (room, page, count) -> asked.add(room + " " + page) ? () -> {} : null;
        try (Link link = Link.open(Transport.SHM, folder, recording)) {
            TransferPlan plan = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 6});

            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(link.destination.holds(5, 5)).isTrue();
            assertThat(asked).isEmpty();
            assertThat(link.peer.capabilities()).contains(io.handoff.spi.transfer.TransferCapability.ONE_SIDED)
                    .doesNotContain(io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES);
        }
    }
}
