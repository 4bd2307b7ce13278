package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.RoomKey;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which rooms a prefill gives up on because their request never came, on a clock the test sets. */
class UnopenedRoomsTest
{
    private static final long ALLOWANCE = 5_000;

    private final UnopenedRooms<String> rooms = new UnopenedRooms<>(ALLOWANCE, 3);

    @Test
    void aNamedRoomWhoseRequestNeverComesIsDueOnceTheAllowancePassedAndOnlyOnce()
    {
        RoomKey key = new RoomKey(7, 1);
        rooms.named(key, "decode-a", 100);
        rooms.named(key, "decode-b", 2_000); // a second naming (its page list) does not restart the allowance

        assertThat(rooms.due(100 + ALLOWANCE - 1)).isEmpty();
        assertThat(rooms.due(100 + ALLOWANCE)).containsExactly(new UnopenedRooms.Due<>(key, "decode-a"));
        assertThat(rooms.due(100 + 10 * ALLOWANCE)).isEmpty();
        assertThat(rooms.size()).isZero();
    }

    @Test
    void aRoomWhoseRequestIsQueuedWaitsForItsAdmissionHoweverLongAndOpeningItForgetsIt()
    {
        RoomKey early = new RoomKey(1, 0);
        RoomKey late = new RoomKey(2, 0);
        rooms.named(early, "decode", 0);
        rooms.queued(early);
        rooms.queued(late);
        rooms.named(late, "decode", 10);

        assertThat(rooms.due(1_000 * ALLOWANCE)).isEmpty();
        rooms.opened(early);
        rooms.opened(late);
        assertThat(rooms.size()).isZero();
        assertThat(rooms.due(2_000 * ALLOWANCE)).isEmpty();
    }

    @Test
    void aQueuedNoticeThatComesAfterTheRequestWasAdmittedOrDroppedQueuesNothing()
    {
        RoomKey admitted = new RoomKey(3, 0);
        RoomKey dropped = new RoomKey(4, 0);
        rooms.opened(admitted);
        assertThat(rooms.dequeued(dropped)).isEmpty();
        rooms.queued(admitted);
        rooms.queued(dropped);

        // a stale claim for either is still given up on: it was not held back by a queued request
        rooms.named(admitted, "decode", 0);
        rooms.named(dropped, "decode", 0);
        assertThat(rooms.due(ALLOWANCE)).extracting(UnopenedRooms.Due::room).containsExactly(admitted, dropped);
    }

    @Test
    void aRequestDroppedWhileQueuedNamesTheDecodeThatClaimedItsRoomAtOnce()
    {
        RoomKey claimed = new RoomKey(5, 0);
        rooms.queued(claimed);
        rooms.named(claimed, "decode-x", 0);

        assertThat(rooms.dequeued(claimed)).contains("decode-x");
        assertThat(rooms.dequeued(claimed)).isEmpty();
        assertThat(rooms.due(10 * ALLOWANCE)).isEmpty();
    }

    @Test
    void beyondItsBoundTheOldestNamedRoomIsDueAtOnceUnlessItsRequestIsQueued()
    {
        RoomKey queuedOne = new RoomKey(10, 0);
        rooms.queued(queuedOne);
        rooms.named(queuedOne, "d", 0);
        rooms.named(new RoomKey(11, 0), "d", 1);
        rooms.named(new RoomKey(12, 0), "d", 2);
        rooms.named(new RoomKey(13, 0), "d", 3);
        rooms.named(new RoomKey(14, 0), "d", 4);

        List<UnopenedRooms.Due<String>> due = rooms.due(5);
        assertThat(due).extracting(UnopenedRooms.Due::room).containsExactly(new RoomKey(11, 0));
        assertThat(rooms.size()).isEqualTo(3);
    }
}
