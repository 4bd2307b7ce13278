package io.handoff.core.disagg;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlChannelTest;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.ControlServer;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.security.LogWarnings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;

import static io.handoff.core.disagg.ClusterPeers.HERE;
import static io.handoff.core.disagg.ClusterPeers.OTHER;
import static io.handoff.core.disagg.ClusterPeers.OTHER_MODEL;
import static io.handoff.core.disagg.ClusterPeers.SECRET;
import static io.handoff.core.disagg.ClusterPeers.secured;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Who gets in on a prefill's control endpoint, over real TCP on loopback: with a cluster secret only a peer that
 * proves it, and on any endpoint only a peer whose first word is an accepted hello. A refused peer hears a generic
 * refusal (nothing of the prefill's model, weights, layout, host or process), is counted, and the prefill's state is
 * untouched.
 */
class ControlAuthenticationTest
{
    private final ClusterPeers peers = new ClusterPeers();

    @AfterEach
    void close()
            throws Exception
    {
        peers.close();
    }

    private static void assertGeneric(ControlMessage answer)
    {
        assertThat(answer).isInstanceOfSatisfying(HelloResult.class, result -> {
            assertThat(result.accepted()).isFalse();
            assertThat(result.reason()).isEqualTo(ControlSecurity.GENERIC_REFUSAL);
            assertThat(result.hostId()).isEmpty();
            assertThat(result.pid()).isNegative();
            assertThat(result.reason()).doesNotContain("tiny-mla").doesNotContain("seed:42").doesNotContain(HERE.kvLayout())
                    .doesNotContain(PeerProcess.localHostId()).doesNotContain(Long.toString(ProcessHandle.current().pid()));
        });
    }

    @Test
    void aForgedHelloWithoutTheSecretIsRefusedWithoutAnyDetailOfThePrefill()
            throws Exception
    {
        ControlSecurity security = secured(SECRET);
        PrefillToDecodeLinks prefill = peers.prefill(security);
        ClusterPeers.Raw forger = peers.raw(prefill);

        forger.send(new Hello(ControlMessage.PROTOCOL_VERSION, "forger", Role.DECODE, OTHER_MODEL));

        assertGeneric(forger.receive());
        assertThat(forger.closedByPeer()).isTrue();
        assertThat(security.failures().total()).isOne();
        assertThat(prefill.awaitingHello()).isZero();
    }

    @Test
    void aWrongSecretIsRefusedAndBothSidesSayItIsTheClusterSecret()
            throws Exception
    {
        ControlSecurity prefillSecurity = secured(SECRET);
        ControlSecurity decodeSecurity = secured(OTHER);
        PrefillToDecodeLinks prefill = peers.prefill(prefillSecurity);
        ClusterPeers.Lost lost = new ClusterPeers.Lost();
        String reason;
        try (LogWarnings warnings = new LogWarnings()) {
            reason = peers.lostReason(peers.decode(HERE, "tcp", decodeSecurity, lost), prefill, lost);
            // the prefill counts, then logs: wait for its line
            ClusterPeers.await("the prefill logs the refusal", () -> warnings.lines().stream().anyMatch(line -> line.contains("refused a connection from")));
            assertThat(prefillSecurity.failures().total()).isOne();
            assertThat(warnings.lines()).anySatisfy(line -> assertThat(line).contains("refused a connection from 127.0.0.1")
                    .contains("cluster authentication failed").contains("cluster secret"));
        }
        assertThat(reason).contains("cluster authentication failed").contains("cluster secret");
        assertThat(decodeSecurity.failures().total()).isOne();
        assertThat(peers.connects).hasValue(0);
    }

    @Test
    void aSecretOnOneSideOnlyIsNamedOnBothSides()
            throws Exception
    {
        // a decode with a secret, a prefill without: the prefill answers that it has none
        ControlSecurity open = ControlSecurity.loopbackOnly();
        PrefillToDecodeLinks insecurePrefill = peers.prefill(open);
        ClusterPeers.Lost lost = new ClusterPeers.Lost();
        try (LogWarnings warnings = new LogWarnings()) {
            String reason = peers.lostReason(peers.decode(HERE, "tcp", secured(SECRET), lost), insecurePrefill, lost);

            assertThat(reason).contains("cluster authentication failed").contains("the peer has no cluster secret but this node has one")
                    .contains("handoff.security.cluster-secret-file");
            ClusterPeers.await("the prefill logs it", () -> warnings.lines().stream().anyMatch(line -> line.contains("this node has no cluster secret")));
        }
        assertThat(open.failures().total()).isOne();

        // a decode without a secret, a prefill with one: the decode's hello is refused, naming the setting
        PrefillToDecodeLinks securePrefill = peers.prefill(secured(SECRET));
        ClusterPeers.Lost lost2 = new ClusterPeers.Lost();
        assertThat(peers.lostReason(peers.decode(HERE, "tcp", ControlSecurity.loopbackOnly(), lost2), securePrefill, lost2))
                .containsAnyOf("handshake refused", "refused the handshake").contains("handoff.security.cluster-secret-file");
    }

    @Test
    void theRightSecretLetsTheHelloThroughAndOnlyThenAreDetailsExchanged()
            throws Exception
    {
        PrefillToDecodeLinks prefill = peers.prefill(secured(SECRET));
        ClusterPeers.Lost lost = new ClusterPeers.Lost();

        String mismatch = peers.lostReason(peers.decode(OTHER_MODEL, "tcp", secured(SECRET), lost), prefill, lost);
        ClusterPeers.Lost lost2 = new ClusterPeers.Lost();
        String registration = peers.lostReason(peers.decode(HERE, "tcp", secured(SECRET), lost2), prefill, lost2);

        // an authenticated peer hears what differs; a compatible one gets as far as its regions
        assertThat(mismatch).contains("handshake refused").contains("model is 'tiny-mla' here but 'tiny-gqa'");
        assertThat(registration).contains("regions refused").contains("cannot reach the decode's memory");
        assertThat(peers.connects).hasValue(1);
    }

    @Test
    void aRegistrationBeforeAHelloIsRefusedAndNeverReachesTheBackend()
            throws Exception
    {
        ControlSecurity security = ControlSecurity.loopbackOnly();
        PrefillToDecodeLinks prefill = peers.prefill(security);
        ClusterPeers.Raw forger = peers.raw(prefill);

        forger.send(new RegisterRegions("tcp", new byte[] {1, 2, 3}));

        assertGeneric(forger.receive());
        assertThat(forger.closedByPeer()).isTrue();
        assertThat(peers.connects).hasValue(0);
        assertThat(security.failures().total()).isOne();
    }

    @Test
    void aNewlineInAPeersHostIdCannotForgeALogLine()
            throws Exception
    {
        PrefillToDecodeLinks prefill = peers.prefill(ControlSecurity.loopbackOnly());
        ClusterPeers.Raw forger = peers.raw(prefill);
        try (LogWarnings warnings = new LogWarnings()) {
            // written by hand: a Hello record could not hold the newline
            forger.sendFrame(hello("decode-1\n2026-01-01 ERROR forged line", OTHER_MODEL));

            assertThat(forger.receive()).isInstanceOfSatisfying(HelloResult.class, result -> assertThat(result.accepted()).isFalse());
            assertThat(forger.closedByPeer()).isTrue();
            assertThat(warnings.lines()).anySatisfy(line -> assertThat(line).contains("decode-1?2026-01-01 ERROR forged line"));
            assertThat(warnings.lines()).allSatisfy(line -> assertThat(line).doesNotContain("\n").doesNotContain("\r"));
        }
    }

    @Test
    void withoutASecretTheControlEndpointListensOnLoopbackOnlyUnlessInsecureRemoteIsAllowed()
            throws Exception
    {
        InetSocketAddress everywhere = new InetSocketAddress("0.0.0.0", 0);
        ControlChannel.Listener nobody = new ControlChannelTest.Recorder();

        assertThatThrownBy(() -> ControlServer.start(everywhere, ControlChannelTest.LIVENESS, peers.clock, ControlSecurity.loopbackOnly(), nobody))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("would listen on 0.0.0.0, which is not a loopback address")
                .hasMessageContaining("handoff.security.cluster-secret-file").hasMessageContaining("allow-insecure-remote = true");
        ClusterSecurity insecure = new ClusterSecurity(Optional.empty(), "", true, ClusterSecurity.DEFAULT_HANDSHAKE_TIMEOUT,
                ClusterSecurity.DEFAULT_FRAME_BYTES_IN_FLIGHT, ClusterSecurity.DEFAULT_MAX_UNAUTHENTICATED,
                ClusterSecurity.DEFAULT_MAX_UNAUTHENTICATED_PER_ADDRESS);
        assertThat(insecure.describe()).startsWith("INSECURE");
        for (ControlSecurity allowed : List.of(ControlSecurity.of(insecure), secured(SECRET))) {
            try (ControlServer server = ControlServer.start(everywhere, ControlChannelTest.LIVENESS, peers.clock, allowed, nobody)) {
                assertThat(server.port()).isPositive();
            }
        }
    }

    private static byte[] hello(String hostId, Compatibility compatibility)
            throws Exception
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(1);
        out.writeInt(ControlMessage.PROTOCOL_VERSION);
        out.writeUTF(hostId);
        out.writeByte(Role.DECODE.ordinal());
        out.writeUTF(compatibility.modelName());
        out.writeUTF(compatibility.weightsHash());
        out.writeUTF(compatibility.kvLayout());
        out.writeUTF(compatibility.kvDtype());
        out.writeInt(compatibility.pageSize());
        out.writeInt(compatibility.protocolVersion());
        out.writeInt(compatibility.tensorRanks());
        return bytes.toByteArray();
    }
}
