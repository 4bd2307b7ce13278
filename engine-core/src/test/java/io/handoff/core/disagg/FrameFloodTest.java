package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.FrameBudget;
import io.handoff.core.disagg.control.FrameReader;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.trace.ConnectionRefusals;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static io.handoff.core.disagg.ClusterPeers.HERE;
import static io.handoff.core.disagg.ClusterPeers.SECRET;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many connections that each announce a 16 MiB frame and then fall silent, as an attacker who wants the prefill to
 * allocate for them: the frame budget shows what they made it hold (nothing before authentication; without a secret,
 * one small first buffer each, never what they announced), the hello or handshake timeout still drops every one of
 * them, and a real decode is served afterwards.
 */
class FrameFloodTest
{
    private static final int CONNECTIONS = 64;
    private static final int SIXTEEN_MIB = 16 << 20;

    private final ClusterPeers peers = new ClusterPeers();

    @AfterEach
    void close()
            throws Exception
    {
        peers.close();
    }

    @Test
    void withoutASecretAFloodHoldsOneSmallBufferPerConnectionAndTheHelloTimeoutDropsThemAll()
            throws Exception
    {
        // caps above the flood: this test is about what each connection holds and its deadline
        ControlSecurity security = ControlSecurity.of(ClusterSecurity.loopbackOnly().withUnauthenticatedCaps(256, CONNECTIONS));
        PrefillToDecodeLinks prefill = peers.prefill(security);
        List<ClusterPeers.Raw> flood = new ArrayList<>();
        for (int i = 0; i < CONNECTIONS; i++) {
            ClusterPeers.Raw raw = peers.raw(prefill);
            // a 16 MiB room request (the one type that may be that long): its length, its type byte, and nothing more
            raw.out.writeInt(SIXTEEN_MIB);
            raw.out.writeByte(5);
            raw.out.flush();
            flood.add(raw);
        }
        ClusterPeers.await("every flood connection's reader is waiting inside its frame",
                () -> security.budget().held() == (long) CONNECTIONS * FrameReader.FIRST_BUFFER_BYTES);

        assertThat(security.budget().held()).isLessThan(SIXTEEN_MIB).isEqualTo(CONNECTIONS * 4096L);
        assertThat(prefill.awaitingHello()).isEqualTo(CONNECTIONS);

        peers.clock.advance(ClusterSecurity.DEFAULT_HANDSHAKE_TIMEOUT);
        prefill.tick();

        for (ClusterPeers.Raw raw : flood) {
            // dropped without a word, so the close is plain even to a peer that reads nothing
            assertThat(raw.in.read()).as("nothing is sent to a connection that never said hello").isEqualTo(-1);
        }
        ClusterPeers.await("the prefill forgets every dropped connection", () -> prefill.awaitingHello() == 0);
        ClusterPeers.await("the readers gave their buffers back", () -> security.budget().held() == 0);
        assertThat(security.failures().total()).isEqualTo(CONNECTIONS);
        ClusterPeers.Lost lost = new ClusterPeers.Lost();
        assertThat(peers.lostReason(peers.decode(HERE, "tcp", security, lost), prefill, lost)).as("a real decode is still served")
                .contains("regions refused");
    }

    @Test
    void withASecretAFloodHoldsNothingAndSilentConnectionsAreDroppedAtTheHandshakeTimeout()
            throws Exception
    {
        ControlSecurity security = ControlSecurity.of(ClusterSecurity.withSecret(SECRET).withHandshakeTimeout(Duration.ofMillis(500))
                .withUnauthenticatedCaps(256, 2 * CONNECTIONS));
        PrefillToDecodeLinks prefill = peers.prefill(security);
        List<ClusterPeers.Raw> announcing = new ArrayList<>();
        List<ClusterPeers.Raw> silent = new ArrayList<>();
        for (int i = 0; i < CONNECTIONS; i++) {
            ClusterPeers.Raw raw = peers.raw(prefill);
            raw.out.writeInt(SIXTEEN_MIB);
            raw.out.flush();
            announcing.add(raw);
            silent.add(peers.raw(prefill));
        }

        for (ClusterPeers.Raw raw : announcing) {
            // closed at once without a word, so the close is plain even to a peer that reads nothing
            assertThat(raw.in.read()).as("a length prefix is not a handshake").isEqualTo(-1);
        }
        for (ClusterPeers.Raw raw : silent) {
            assertThat(raw.closedByPeer()).as("dropped by the handshake timeout").isTrue();
        }

        assertThat(security.budget().held()).isZero();
        assertThat(security.budget().refused()).isZero();
        ClusterPeers.await("every refusal is counted", () -> security.failures().total() == 2L * CONNECTIONS);
        ClusterPeers.Lost lost = new ClusterPeers.Lost();
        ControlSecurity decode = ControlSecurity.of(ClusterSecurity.withSecret(SECRET));
        assertThat(peers.lostReason(peers.decode(HERE, "tcp", decode, lost), prefill, lost)).as("an authenticated decode is still served")
                .contains("regions refused");
    }

    @Test
    void connectionsBeyondTheCapsAreClosedOnArrivalCountedAndTheDeadlineStillDropsTheRestDuringAndAfterTheFlood()
            throws Exception
    {
        ControlSecurity security = ControlSecurity.of(ClusterSecurity.loopbackOnly().withUnauthenticatedCaps(256, 8));
        PrefillToDecodeLinks prefill = peers.prefill(security);
        List<ClusterPeers.Raw> held = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            ClusterPeers.Raw raw = peers.raw(prefill);
            raw.out.writeInt(SIXTEEN_MIB);
            raw.out.flush();
            held.add(raw);
        }
        ClusterPeers.await("eight connections wait for their hello", () -> prefill.awaitingHello() == 8);
        List<ClusterPeers.Raw> beyond = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            beyond.add(peers.raw(prefill));
        }
        for (ClusterPeers.Raw raw : beyond) {
            assertThat(raw.in.read()).as("closed on arrival, beyond the per-address cap").isEqualTo(-1);
        }
        ClusterPeers.await("each refusal is counted", () -> security.failures().refusals().total("control") == 16);
        assertThat(security.failures().refusals().counts()).containsEntry(new ConnectionRefusals.Key("control", "limit"), 16L);

        // half the deadline later, a new connection fits again only once one of the first eight is gone
        peers.clock.advance(ClusterSecurity.DEFAULT_HANDSHAKE_TIMEOUT.dividedBy(2));
        held.getFirst().socket.close();
        ClusterPeers.await("the prefill forgets the closed one", () -> prefill.awaitingHello() == 7);
        ClusterPeers.Raw late = peers.raw(prefill);
        ClusterPeers.await("the late one is taken", () -> prefill.awaitingHello() == 8);

        // the deadline of the first seven falls; the late one's, counted from its own arrival, not yet
        peers.clock.advance(ClusterSecurity.DEFAULT_HANDSHAKE_TIMEOUT.dividedBy(2));
        prefill.tick();
        for (ClusterPeers.Raw raw : held.subList(1, 8)) {
            assertThat(raw.in.read()).isEqualTo(-1);
        }
        ClusterPeers.await("only the late one waits", () -> prefill.awaitingHello() == 1);
        peers.clock.advance(ClusterSecurity.DEFAULT_HANDSHAKE_TIMEOUT.dividedBy(2));
        prefill.tick();
        assertThat(late.in.read()).isEqualTo(-1);
        assertThat(security.failures().refusals().counts()).containsEntry(new ConnectionRefusals.Key("control", "hello-timeout"), 8L)
                .containsEntry(new ConnectionRefusals.Key("control", "closed-before-hello"), 1L);
        ClusterPeers.Lost lost = new ClusterPeers.Lost();
        assertThat(peers.lostReason(peers.decode(HERE, "tcp", security, lost), prefill, lost)).as("a real decode is still served")
                .contains("regions refused");
    }

    @Test
    void aFrameLongerThanItsTypeAllowsIsRefusedBeforeAByteOfItIsBuffered()
            throws Exception
    {
        ControlSecurity security = ControlSecurity.loopbackOnly();
        PrefillToDecodeLinks prefill = peers.prefill(security);
        ClusterPeers.Raw raw = peers.raw(prefill);

        // a hello is a few KiB at most
        raw.out.writeInt(SIXTEEN_MIB);
        raw.out.writeByte(1);
        raw.out.flush();

        assertThat(raw.closedByPeer()).isTrue();
        assertThat(security.budget().held()).isZero();
        ClusterPeers.await("the prefill forgets the connection", () -> prefill.awaitingHello() == 0);
    }

    @Test
    void aFrameBeyondTheBudgetClosesItsConnectionInsteadOfBeingBuffered()
            throws Exception
    {
        ControlSecurity security = new ControlSecurity(ClusterSecurity.loopbackOnly(), new FrameBudget(3 * 4096), new io.handoff.core.security.AuthFailures());
        PrefillToDecodeLinks prefill = peers.prefill(security);
        List<ClusterPeers.Raw> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ClusterPeers.Raw raw = peers.raw(prefill);
            raw.out.writeInt(SIXTEEN_MIB);
            raw.out.writeByte(5);
            raw.out.flush();
            held.add(raw);
        }
        ClusterPeers.await("three readers hold the whole budget", () -> security.budget().held() == 3 * 4096);
        ClusterPeers.Raw fourth = peers.raw(prefill);

        fourth.out.writeInt(SIXTEEN_MIB);
        fourth.out.writeByte(5);
        fourth.out.flush();

        assertThat(fourth.closedByPeer()).isTrue();
        assertThat(security.budget().refused()).isOne();
        assertThat(security.budget().held()).isEqualTo(3 * 4096);
    }
}
