package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.handoff.plugin.nixl.Link.bytesOf;
import static io.handoff.plugin.nixl.Link.pagesOf;
import static io.handoff.plugin.nixl.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data path over UCX's tcp transport and over its shared-memory transports, two backends in one JVM: what lands
 * where, the producer fence (I1), the hooks, drain and close.
 */
class TransferTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey OTHER_ROOM = new RoomKey(8, 0);

    @BeforeAll
    static void ucx()
    {
        Ucx.assumeAvailable();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self", "sysv,self"})
    void putsExactlyThePlannedPagesOfEveryRegionAndNothingElse(String tls)
            throws Exception
    {
        try (Link link = Link.open(tls)) {
            // Coalesced runs over three regions of two page strides.
            TransferPlan first = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 10}, new int[] {40, 10, 1});
            TransferPlan second = plan(ROOM, 1, 13, ProducerFence.DONE, new int[] {60, 30, 4});
            Outcome firstOutcome = link.post(first);
            Outcome secondOutcome = link.post(second);

            assertThat(firstOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(first), null));
            assertThat(secondOutcome.await()).isEqualTo(new Outcome.Result(bytesOf(second), null));
            assertThat(link.destination.mismatches(0, pagesOf(first, second))).isEmpty();
            assertThat(firstOutcome.calls()).isEqualTo(1);
            assertThat(secondOutcome.calls()).isEqualTo(1);
        }
    }
}
