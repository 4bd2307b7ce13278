package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.ProcessAttestation;
import io.handoff.core.disagg.control.ControlMessage.ProcessQuery;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.peer.DecodeToPrefillLinks;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static io.handoff.core.disagg.ClusterPeers.HERE;
import static io.handoff.core.disagg.ClusterPeers.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The attestation on the wire: a prefill answers its hello with its start time and incarnation, and a decode's question
 * whether a process of its host still runs from its process check (injected: no real process dies); the question before
 * a hello is refused like any message; on the decode, an attestation before the hello's answer fails the link and is
 * never taken as a proof.
 */
class ProcessAttestationLinksTest
{
    private static final PeerProcess SELF = new PeerProcess("prefill-host/boot-a", 5151, 2_000, "new-incarnation");
    private static final long LIVE_PID = 7777;

    private final ClusterPeers peers = new ClusterPeers();

    @AfterEach
    void close()
            throws Exception
    {
        peers.close();
    }

    @Test
    void thePrefillNamesItsIncarnationAndStartAndAttestsOnlyAProcessItsCheckCannotFind()
            throws Exception
    {
        PrefillToDecodeLinks prefill = peers.prefill(ControlSecurity.loopbackOnly(), SELF, (pid, start) -> pid == LIVE_PID);
        ClusterPeers.Raw decode = peers.raw(prefill);

        decode.send(new Hello(ControlMessage.PROTOCOL_VERSION, "decode-host", Role.DECODE, HERE));
        HelloResult answer = (HelloResult) decode.receive();
        assertThat(answer.accepted()).isTrue();
        assertThat(answer.process()).isEqualTo(SELF);

        decode.send(new ProcessQuery(4242, 1_000));
        assertThat(decode.receive()).isEqualTo(new ProcessAttestation(4242, 1_000, true));
        decode.send(new ProcessQuery(LIVE_PID, 1_000));
        assertThat(decode.receive()).isEqualTo(new ProcessAttestation(LIVE_PID, 1_000, false));
        // about itself it never says gone
        decode.send(new ProcessQuery(SELF.pid(), SELF.startMillis()));
        assertThat(decode.receive()).isEqualTo(new ProcessAttestation(SELF.pid(), SELF.startMillis(), false));
    }

    @Test
    void aQuestionBeforeTheHelloIsRefusedUnanswered()
            throws Exception
    {
        ControlSecurity security = ControlSecurity.loopbackOnly();
        PrefillToDecodeLinks prefill = peers.prefill(security, SELF, (pid, start) -> false);
        ClusterPeers.Raw forger = peers.raw(prefill);

        forger.send(new ProcessQuery(4242, 1_000));

        HelloResult refusal = (HelloResult) forger.receive();
        assertThat(refusal.accepted()).isFalse();
        assertThat(refusal.process().known()).isFalse();
        assertThat(forger.closedByPeer()).isTrue();
        assertThat(security.failures().total()).isOne();
    }

    @Test
    void theDecodeTakesAnAttestationOnlyAfterThePrefillAcceptedItsHello()
            throws Exception
    {
        Heard heard = new Heard();
        DecodeToPrefillLinks<String> decode = peers.decode(HERE, "tcp", ControlSecurity.loopbackOnly(), heard);

        // before the answer: the link fails, and the attestation is not heard
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            DecodeToPrefillLinks.Link<String> link = decode.to("127.0.0.1:" + server.getLocalPort());
            decode.join(link, "room");
            try (ClusterPeers.Raw forger = new ClusterPeers.Raw(server.accept())) {
                assertThat(forger.receive()).isInstanceOf(Hello.class);
                forger.send(new ProcessAttestation(4242, 1_000, true));
                assertThat(heard.reason("room").get(WAIT.toSeconds(), TimeUnit.SECONDS)).contains("before it answered this decode's hello");
                assertThat(link.failed()).isTrue();
            }
        }
        assertThat(heard.attestations).isEmpty();

        // after it: heard, on its link
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            DecodeToPrefillLinks.Link<String> link = decode.to("127.0.0.1:" + server.getLocalPort());
            try (ClusterPeers.Raw prefill = new ClusterPeers.Raw(server.accept())) {
                assertThat(prefill.receive()).isInstanceOf(Hello.class);
                prefill.send(HelloResult.ACCEPTED.from(SELF));
                assertThat(prefill.receive()).isInstanceOf(ControlMessage.RegisterRegions.class);
                prefill.send(new ProcessAttestation(4242, 1_000, true));
                assertThat(heard.first.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(new ProcessAttestation(4242, 1_000, true));
                assertThat(heard.attestations).hasSize(1);
                assertThat(link.peer()).isEqualTo(SELF);
            }
        }
    }

    /** The lost rooms' reasons and the attestations heard. */
    private static final class Heard
            extends ClusterPeers.Lost
    {
        final List<ProcessAttestation> attestations = new CopyOnWriteArrayList<>();
        final CompletableFuture<ProcessAttestation> first = new CompletableFuture<>();

        @Override
        public void attested(DecodeToPrefillLinks.Link<String> from, ProcessAttestation attestation)
        {
            attestations.add(attestation);
            first.complete(attestation);
        }
    }
}
