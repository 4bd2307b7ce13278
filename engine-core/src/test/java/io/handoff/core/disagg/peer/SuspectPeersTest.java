package io.handoff.core.disagg.peer;

import io.handoff.spi.transfer.RoomKey;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** A prefill becomes suspect when a quarantine of its outlives the drain deadline, once, and stops being one only on proofs. */
class SuspectPeersTest
{
    private static final long DEADLINE = Duration.ofSeconds(60).toNanos();
    private static final RoomKey A = new RoomKey(1, 0);
    private static final RoomKey B = new RoomKey(2, 0);
    private static final RoomKey C = new RoomKey(3, 0);

    @Test
    void aPeerIsSuspectOnceItsFirstQuarantinePassesTheDeadlineAndReportedOnlyThen()
    {
        SuspectPeers suspects = new SuspectPeers(Duration.ofNanos(DEADLINE));
        suspects.quarantined(A, "prefill-1:7001", 0);
        suspects.quarantined(B, "prefill-1:7001", 10);
        suspects.quarantined(C, "prefill-2:7001", 0);
        suspects.proven(C);

        assertThat(suspects.due(DEADLINE - 1)).isEmpty();
        assertThat(suspects.peers()).isEmpty();
        assertThat(suspects.due(DEADLINE)).containsExactly("prefill-1:7001");
        assertThat(suspects.rooms("prefill-1:7001")).containsExactly(A);
        // already suspect: not reported again, but its later room joins the list
        assertThat(suspects.due(DEADLINE + 10)).isEmpty();
        assertThat(suspects.rooms("prefill-1:7001")).containsExactly(A, B);
        assertThat(suspects.peers()).containsExactly("prefill-1:7001");
    }

    @Test
    void aSuspectPeerIsClearedOnlyWhenEveryRoomItWasSuspectForHasItsProof()
    {
        SuspectPeers suspects = new SuspectPeers(Duration.ofNanos(DEADLINE));
        suspects.quarantined(A, "prefill-1:7001", 0);
        suspects.quarantined(B, "prefill-1:7001", 0);
        suspects.due(Long.MAX_VALUE / 2);

        suspects.proven(A);
        assertThat(suspects.peers()).containsExactly("prefill-1:7001");
        // time alone changes nothing
        assertThat(suspects.due(Long.MAX_VALUE / 2 + DEADLINE * 1000)).isEmpty();
        assertThat(suspects.peers()).containsExactly("prefill-1:7001");

        suspects.proven(B);
        assertThat(suspects.peers()).isEmpty();
        assertThat(suspects.rooms("prefill-1:7001")).isEmpty();
        // a proof for a room it never waited for changes nothing
        suspects.proven(new RoomKey(9, 9));
        assertThat(suspects.peers()).isEmpty();
    }
}
