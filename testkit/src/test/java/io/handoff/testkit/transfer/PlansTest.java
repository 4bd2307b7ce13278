package io.handoff.testkit.transfer;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

class PlansTest
{
    private final TransferPlan plan = Plans.plan(new RoomKey(1, 0), 0, 0, ProducerFence.DONE, new int[] {3, 50, 2}, new int[] {20, 0, 1});

    @Test
    void mapsEveryDestinationPageToItsSourceInTheOrderThePlanCopiesThem()
    {
        assertThat(Plans.pagesOf(plan)).containsExactly(entry(50, 3), entry(51, 4), entry(0, 20));
        assertThat(Plans.firstPages(plan, 2)).containsExactly(entry(50, 3), entry(51, 4));
        assertThat(Plans.bytesOf(plan)).isEqualTo(3 * (1024 + 1024 + 512));
    }
}
