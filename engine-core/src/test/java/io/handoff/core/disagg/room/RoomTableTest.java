package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RoomTableTest
{
    static final RoomKey GEN_1 = new RoomKey(8, 1);
    static final RoomKey GEN_2 = new RoomKey(8, 2);

    @Test
    void messagesReachTheLiveRoomOfTheirExactGeneration()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        assertThat(table.register(GEN_2, "room")).isEmpty();

        assertThat(table.route(new ChunkDone(GEN_2, 0, 0, 1))).contains("room");
        assertThat(table.get(GEN_2)).contains("room");
        assertThat(table.get(GEN_1)).isEmpty();
        assertThat(table.rooms()).containsExactly("room");
    }

    @Test
    void olderGenerationIsDroppedAndCountedBothWhileItsSuccessorIsLiveAndAfterItRetired()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.register(GEN_1, "first");
        table.retire(GEN_1);
        assertThat(table.route(new ChunkDone(GEN_1, 0, 0, 1))).isEmpty();
        assertThat(table.dropped()).isOne();

        table.register(GEN_2, "second");
        assertThat(table.route(new RoomFailed(GEN_1, FailureCause.ENGINE, "late"))).isEmpty();
        assertThat(table.dropped()).isEqualTo(2);
        assertThat(table.parkedRooms()).isZero();
    }

    @Test
    void messagesBeforeTheRoomIsRegisteredAreParkedAndReplayedInOrder()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        RoomRequest request = new RoomRequest(GEN_1, "rid", 4, new int[] {1});
        RoomFailed failed = new RoomFailed(GEN_1, FailureCause.CLIENT_ABORT, "decode gave up");
        assertThat(table.route(request)).isEmpty();
        assertThat(table.route(failed)).isEmpty();

        assertThat(table.register(GEN_1, "room")).containsExactly(request, failed);
        assertThat(table.parkedRooms()).isZero();
        assertThat(table.dropped()).isZero();
    }

    @Test
    void aRoomGivenUpBeforeItWasRegisteredIsRetiredWithWhatWasParkedForItAndCannotBeOpenedLater()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.route(new RoomRequest(GEN_1, "rid", 4, new int[] {1}));
        table.route(new RoomFailed(GEN_1, FailureCause.CLIENT_ABORT, "decode gave up"));
        table.route(new DrainRequest(GEN_1));

        assertThat(table.retireUnregistered(GEN_1)).isTrue();
        assertThat(table.parkedRooms()).as("the page list is gone with the room").isZero();
        assertThatThrownBy(() -> table.register(GEN_1, "late copy of the request"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("retired");
        assertThat(table.route(new RoomRequest(GEN_1, "rid", 4, new int[] {1}))).isEmpty();
        assertThat(table.parkedRooms()).as("a late page list is dropped, not parked").isZero();
    }

    @Test
    void aRegisteredRoomIsNotRetiredByADrainRequestItAnswersItself()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.register(GEN_1, "first");
        assertThat(table.retireUnregistered(GEN_1)).isFalse();
        assertThat(table.route(new DrainRequest(GEN_1))).contains("first");

        table.register(GEN_2, "second");
        assertThat(table.retireUnregistered(GEN_1)).as("superseded, still waiting for its own drain").isFalse();
        assertThat(table.route(new DrainRequest(GEN_1))).contains("first");
    }

    @Test
    void parkingIsBoundedAndWhatDoesNotFitIsCounted()
    {
        RoomTable<String> table = new RoomTable<>(2, 4);
        for (int id = 0; id < 3; id++) {
            table.route(new DrainRequest(new RoomKey(id, 0)));
        }
        assertThat(table.parkedRooms()).isEqualTo(2);
        assertThat(table.dropped()).isOne();
        // the oldest was evicted
        assertThat(table.register(new RoomKey(0, 0), "r0")).isEmpty();

        for (int i = 0; i < 20; i++) {
            table.route(new ChunkDone(new RoomKey(2, 0), i, i, 1));
        }
        // one drain request and 15 chunks fit; 5 chunks do not
        assertThat(table.register(new RoomKey(2, 0), "r2")).hasSize(16);
        assertThat(table.dropped()).isEqualTo(1 + 5);
    }

    @Test
    void retiringAnUnregisteredRoomDropsWhatWasParkedForIt()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.route(new ChunkDone(GEN_1, 0, 0, 1));
        table.retire(GEN_1);
        assertThat(table.parkedRooms()).isZero();
        assertThat(table.dropped()).isOne();
    }

    @Test
    void aLiveGenerationOrAnOlderOneOrARetiredOneCannotBeRegisteredAgain()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.register(GEN_2, "a");
        assertThatThrownBy(() -> table.register(GEN_2, "b")).hasMessage("room id 8 is live as 8#2; cannot register 8#2");
        assertThatThrownBy(() -> table.register(GEN_1, "b")).hasMessage("room id 8 is live as 8#2; cannot register 8#1");
        table.retire(GEN_2);
        assertThatThrownBy(() -> table.register(GEN_1, "c")).hasMessage("room 8#1 reuses a retired generation (newest retired: 2)");
        assertThat(table.register(new RoomKey(8, 3), "d")).isEmpty();
    }

    @Test
    void aNewerGenerationSupersedesALiveOneWhichKeepsItsOwnMessagesUntilItIsRetired()
    {
        RoomTable<String> table = new RoomTable<>(4, 4);
        table.register(GEN_1, "waiting for its drain ack");
        table.register(GEN_2, "successor");

        assertThat(table.route(new DrainAck(GEN_1))).contains("waiting for its drain ack");
        assertThat(table.route(new ChunkDone(GEN_2, 0, 0, 1))).contains("successor");
        assertThat(table.get(GEN_1)).contains("waiting for its drain ack");
        assertThat(table.rooms()).containsExactlyInAnyOrder("waiting for its drain ack", "successor");
        assertThat(table.dropped()).isZero();

        table.retire(GEN_1);
        assertThat(table.route(new DrainAck(GEN_1))).isEmpty();
        assertThat(table.dropped()).isOne();
        assertThat(table.get(GEN_2)).contains("successor");
        assertThat(table.rooms()).containsExactly("successor");
    }

    @Test
    void forgetsTheOldestRetiredRoomIdsBeyondItsBound()
    {
        RoomTable<String> table = new RoomTable<>(4, 2);
        for (int id = 0; id < 3; id++) {
            RoomKey key = new RoomKey(id, 0);
            table.register(key, "r" + id);
            table.retire(key);
        }
        // room 0 was forgotten: a late message for it is parked, not recognised as stale
        table.route(new ChunkDone(new RoomKey(0, 0), 0, 0, 1));
        assertThat(table.parkedRooms()).isOne();
        table.route(new ChunkDone(new RoomKey(2, 0), 0, 0, 1));
        assertThat(table.dropped()).isOne();
    }
}
