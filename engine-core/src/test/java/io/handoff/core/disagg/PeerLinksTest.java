package io.handoff.core.disagg;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlChannelTest;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.peer.DecodeToPrefillLinks;
import io.handoff.core.disagg.peer.DisaggregationConfig;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill's {@link PrefillToDecodeLinks} and a decode's {@link DecodeToPrefillLinks} over real TCP on loopback: the handshake
 * and the region registration, and what rooms hear when either is refused. Waiting is only for an outcome the
 * test already caused, with a generous bound.
 */
class PeerLinksTest
{
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Compatibility HERE = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));
    private static final Compatibility OTHER_MODEL = Compatibility.of("tiny-gqa", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final List<AutoCloseable> resources = new ArrayList<>();

    /** What the decode's rooms (plain names here) hear from their links. */
    private static final class Heard
            implements DecodeToPrefillLinks.Rooms<String>
    {
        final Map<String, CompletableFuture<String>> lost = new ConcurrentHashMap<>();
        final Map<String, FailureCause> causes = new ConcurrentHashMap<>();
        final Map<String, CompletableFuture<ReleasePolicy>> ready = new ConcurrentHashMap<>();
        // a failing link asks for its rooms after it stopped being the link for its address
        final CompletableFuture<Void> failedLinkForgotten = new CompletableFuture<>();

        CompletableFuture<String> lost(String room)
        {
            return lost.computeIfAbsent(room, r -> new CompletableFuture<>());
        }

        @Override
        public void received(DecodeToPrefillLinks.Link<String> from, RoomMessage message)
        {
        }

        @Override
        public void ready(String room, ReleasePolicy policy)
        {
            ready.computeIfAbsent(room, r -> new CompletableFuture<>()).complete(policy);
        }

        @Override
        public void lost(String room, FailureCause cause, String reason)
        {
            causes.putIfAbsent(room, cause);
            lost(room).complete(reason);
        }

        @Override
        public void fenced(String room, String how)
        {
        }

        @Override
        public List<String> on(DecodeToPrefillLinks.Link<String> link)
        {
            failedLinkForgotten.complete(null);
            return List.of();
        }
    }

    /** A backend that exposes a token descriptor and cannot connect: these tests never get past registration. */
    private static TransferBackend backend()
    {
        return new TransferBackend()
        {
            @Override
            public byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
            {
                return new byte[] {1};
            }

            @Override
            public void registerSources(List<MemoryRegion> regions)
            {
            }

            @Override
            public TransferPeer connect(String peerHostId, byte[] descriptor)
            {
                throw new IllegalStateException("this test backend does not connect");
            }

            @Override
            public void close()
            {
            }
        };
    }

    private static DisaggregationConfig config(String backendId)
    {
        return new DisaggregationConfig(backendId, "off", "127.0.0.1", 0, ControlChannelTest.LIVENESS, WAIT, RoomDeadlines.DEFAULT, 8,
                TransferLink.Timeouts.DEFAULT, false);
    }

    private PrefillToDecodeLinks prefill(String backendId)
            throws Exception
    {
        PrefillToDecodeLinks links = new PrefillToDecodeLinks(config(backendId), HERE, backendId, backend(), new EarlySend("off", false, "off"),
                new PageGeometry(List.of(), 0), TransferHooks.NONE, clock, new TransferStats(), new PrefillToDecodeLinks.Rooms()
                {
                    @Override
                    public void received(ControlChannel channel, RoomMessage message)
                    {
                    }

                    @Override
                    public void lost(ControlChannel channel, String reason)
                    {
                    }
                });
        resources.add(links);
        return links;
    }

    private DecodeToPrefillLinks<String> decode(Compatibility compatibility, String backendId, Heard heard)
    {
        DecodeToPrefillLinks<String> links = new DecodeToPrefillLinks<>(config(backendId), compatibility, backendId, backend(), List.of(), null,
                (room, page, count) -> null, clock, new TransferStats(), heard);
        resources.add(links);
        return links;
    }

    @AfterEach
    void close()
            throws Exception
    {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    @Test
    void aRoomOnAPrefillThatRefusesTheHandshakeLosesItsPeerWithTheReason()
            throws Exception
    {
        PrefillToDecodeLinks prefill = prefill("tcp");
        Heard heard = new Heard();
        DecodeToPrefillLinks<String> decode = decode(OTHER_MODEL, "tcp", heard);

        DecodeToPrefillLinks.Link<String> link = decode.to(prefill.controlAddress());
        decode.join(link, "room-1");

        String reason = heard.lost("room-1").get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(reason).contains(prefill.controlAddress()).contains("handshake refused").contains("model is 'tiny-mla' here but 'tiny-gqa'");
        assertThat(heard.causes).containsEntry("room-1", FailureCause.HANDSHAKE_REFUSED);
        assertThat(heard.ready).isEmpty();
    }

    @Test
    void aRoomOnAPrefillWithAnotherBackendLosesItsPeerNamingBoth()
            throws Exception
    {
        PrefillToDecodeLinks prefill = prefill("tcp");
        Heard heard = new Heard();
        DecodeToPrefillLinks<String> decode = decode(HERE, "shm", heard);

        DecodeToPrefillLinks.Link<String> link = decode.to(prefill.controlAddress());
        decode.join(link, "room-1");

        String reason = heard.lost("room-1").get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(reason).contains("regions refused").contains("transfers with 'tcp'").contains("regions for 'shm'");
        assertThat(heard.causes).containsEntry("room-1", FailureCause.HANDSHAKE_REFUSED);
        assertThat(prefill.transport()).isEqualTo("not connected yet");
    }

    @Test
    void aRoomJoiningAFailedLinkHearsAtOnceAndTheNextRequestConnectsAfresh()
            throws Exception
    {
        PrefillToDecodeLinks prefill = prefill("tcp");
        Heard heard = new Heard();
        DecodeToPrefillLinks<String> decode = decode(OTHER_MODEL, "tcp", heard);
        DecodeToPrefillLinks.Link<String> failed = decode.to(prefill.controlAddress());
        decode.join(failed, "room-1");
        String reason = heard.lost("room-1").get(WAIT.toSeconds(), TimeUnit.SECONDS);
        heard.failedLinkForgotten.get(WAIT.toSeconds(), TimeUnit.SECONDS);

        decode.join(failed, "room-2");

        assertThat(heard.lost("room-2")).isCompletedWithValue(reason);
        assertThat(decode.to(prefill.controlAddress())).isNotSameAs(failed);
    }
}
