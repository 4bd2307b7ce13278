package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.peer.DecodeToPrefillLinks;
import io.handoff.core.disagg.peer.DrainAckOriginsTest;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A decode's claims on a link whose hello the prefill has not answered yet are held (a claim before an accepted hello
 * would be refused) and go out right after the answer, in order; on a link that is up they go at once. The prefill is
 * a socket the test drives frame by frame, so the claims are made while the hello is unanswered, deterministically.
 */
class RoomClaimLinksTest
{
    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final List<AutoCloseable> resources = new ArrayList<>();

    @AfterEach
    void close()
            throws Exception
    {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    @Test
    void claimsMadeBeforeThePrefillAnsweredTheHelloFollowItsAnswerInOrderAndLaterOnesGoAtOnce()
            throws Exception
    {
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        resources.add(server);
        DecodeToPrefillLinks<String> decode = new DecodeToPrefillLinks<>(DrainAckOriginsTest.config(), DrainAckOriginsTest.HERE, "idle",
                DrainAckOriginsTest.backend(), List.of(), null, (room, page, count) -> null, clock, new TransferStats(), new ClusterPeers.Lost());
        resources.add(decode);

        DecodeToPrefillLinks.Link<String> link = decode.to("127.0.0.1:" + server.getLocalPort());
        ClusterPeers.Raw prefill = new ClusterPeers.Raw(server.accept());
        resources.add(prefill);
        assertThat(prefill.receive()).isInstanceOf(ControlMessage.Hello.class);

        // the hello is unanswered: these must wait
        // and so must the end of a claimed room whose request was aborted before admission, after its claim
        List<ControlMessage.RoomMessage> queued = List.of(new RoomClaim(new RoomKey(900, 0), "queued-0"), new RoomClaim(new RoomKey(901, 0), "queued-1"),
                new ControlMessage.RoomFailed(new RoomKey(900, 0), FailureCause.CLIENT_ABORT, "aborted while queued"),
                new RoomClaim(new RoomKey(902, 3), "queued-2"));
        queued.forEach(claim -> decode.claim(link, claim));
        prefill.send(HelloResult.ACCEPTED.from(new PeerProcess("prefill-host", 4242, HelloResult.UNKNOWN_START, "")));

        assertThat(prefill.receive()).isInstanceOf(RegisterRegions.class);
        assertThat(List.of(prefill.receive(), prefill.receive(), prefill.receive(), prefill.receive())).isEqualTo(queued);
        RoomClaim later = new RoomClaim(new RoomKey(950, 1), "later");
        decode.claim(link, later);
        assertThat(prefill.receive()).isEqualTo(later);
        assertThat(link.process()).isEqualTo("prefill-host/4242");
    }
}
