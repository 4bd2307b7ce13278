package io.handoff.plugin.nixl;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The staging buffer's slots: two halves used in turn when a half holds a page of every region, else one. */
class StagingSlotsTest
{
    @Test
    void twoHalvesTakenInTurn()
    {
        StagingSlots slots = new StagingSlots(64L << 20, 1 << 20);

        assertThat(slots.count()).isEqualTo(2);
        assertThat(slots.slotBytes()).isEqualTo(32L << 20);
        assertThat(slots.advance()).isEqualTo(0);
        assertThat(slots.advance()).isEqualTo(32L << 20);
        assertThat(slots.advance()).isEqualTo(0);
        slots.reset();
        assertThat(slots.advance()).isEqualTo(0);
    }

    @Test
    void halvesAreCacheLineAlignedAndHoldAPage()
    {
        StagingSlots slots = new StagingSlots(6 * 1024, 2560);

        assertThat(slots.count()).isEqualTo(2);
        assertThat(slots.slotBytes()).isEqualTo(3072);
        StagingSlots odd = new StagingSlots(1000, 400);
        assertThat(odd.slotBytes()).isEqualTo(448);
        assertThat(odd.slotBytes() % 64).isZero();
    }

    @Test
    void oneSlotWhenAHalfCannotHoldAPageOfEveryRegion()
    {
        StagingSlots slots = new StagingSlots(4096, 3000);

        assertThat(slots.count()).isEqualTo(1);
        assertThat(slots.slotBytes()).isEqualTo(4096);
        assertThat(slots.advance()).isEqualTo(0);
        assertThat(slots.advance()).isEqualTo(0);
        assertThatThrownBy(() -> new StagingSlots(4096, 5000)).hasMessageContaining("more than the 4096-byte staging buffer");
    }
}
