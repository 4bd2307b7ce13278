package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.ClusterPeers;
import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlChannelTest;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
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
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A decode counts a drain ack only from its room's own prefill: over the room's link, or over a new connection to the
 * same prefill process; an ack another prefill sends for the room is dropped and counted. Two prefills and a decode
 * with real control connections on loopback; each prefill acks a room the decode asked it about.
 */
public class DrainAckOriginsTest
{
    private static final Duration WAIT = Duration.ofSeconds(20);
    public static final Compatibility HERE = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));
    static final PageGeometry POOL = new PageGeometry(List.of(64L), 8);
    private static final RoomKey ROOM = new RoomKey(700, 3);

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final List<AutoCloseable> resources = new ArrayList<>();
    private final Heard heard = new Heard();

    @AfterEach
    void close()
            throws Exception
    {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    @Test
    void anAckCountsFromTheRoomsOwnPrefillOnItsLinkOrANewConnectionToItAndIsDroppedFromAnotherPrefill()
            throws Exception
    {
        PrefillToDecodeLinks own = prefill();
        PrefillToDecodeLinks other = prefill();
        DecodeToPrefillLinks<String> decode = decode();
        DecodeToPrefillLinks.Link<String> roomLink = ready(decode, own, "room");
        DecodeToPrefillLinks.Link<String> otherLink = ready(decode, other, "bystander");
        AtomicLong now = new AtomicLong();
        DrainAckOrigins origins = new DrainAckOrigins(now::get, Duration.ofMinutes(1));

        // both prefills learn the room (the decode's page list) and ack it on the connection it came from
        CompletableFuture<DecodeToPrefillLinks.Link<String>> fromOwn = heard.ackOver();
        assertThat(roomLink.send(new RoomRequest(ROOM, "rid", 16, new int[] {0}))).isTrue();
        ClusterPeers.await("the room's prefill learned the room", () -> own.send(ROOM, new DrainAck(ROOM)));
        assertThat(fromOwn.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isSameAs(roomLink);
        CompletableFuture<DecodeToPrefillLinks.Link<String>> fromOther = heard.ackOver();
        assertThat(otherLink.send(new RoomRequest(ROOM, "rid", 16, new int[] {0}))).isTrue();
        ClusterPeers.await("the other prefill learned the room", () -> other.send(ROOM, new DrainAck(ROOM)));
        assertThat(fromOther.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isSameAs(otherLink);

        assertThat(origins.accepts(new DrainAck(ROOM), roomLink, roomLink)).isTrue();
        assertThat(origins.accepts(new DrainAck(ROOM), roomLink, otherLink)).as("another prefill's ack").isFalse();
        assertThat(origins.accepts(new DrainAck(ROOM), roomLink, otherLink)).isFalse();
        assertThat(origins.refused()).isEqualTo(2);

        // the room's connection goes; the decode connects to the same prefill process again and may hear its ack there
        decode.fence(own.controlAddress(), "the test closes the room's connection");
        DecodeToPrefillLinks.Link<String> again = ready(decode, own, "later");
        assertThat(again).isNotSameAs(roomLink);
        assertThat(again.process()).isEqualTo(roomLink.process()).isNotEmpty();
        assertThat(origins.accepts(new DrainAck(ROOM), roomLink, again)).as("the same process on a new connection").isTrue();
        assertThat(origins.refused()).isEqualTo(2);
    }

    private DecodeToPrefillLinks.Link<String> ready(DecodeToPrefillLinks<String> decode, PrefillToDecodeLinks prefill, String room)
            throws Exception
    {
        DecodeToPrefillLinks.Link<String> link = decode.to(prefill.controlAddress());
        decode.join(link, room);
        heard.ready(room).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        return link;
    }

    /** What the decode's rooms hear: which link each drain ack came over. */
    private static final class Heard
            implements DecodeToPrefillLinks.Rooms<String>
    {
        private final java.util.Map<String, CompletableFuture<ReleasePolicy>> ready = new java.util.concurrent.ConcurrentHashMap<>();
        private volatile CompletableFuture<DecodeToPrefillLinks.Link<String>> ack = new CompletableFuture<>();

        CompletableFuture<ReleasePolicy> ready(String room)
        {
            return ready.computeIfAbsent(room, r -> new CompletableFuture<>());
        }

        CompletableFuture<DecodeToPrefillLinks.Link<String>> ackOver()
        {
            ack = new CompletableFuture<>();
            return ack;
        }

        @Override
        public void received(DecodeToPrefillLinks.Link<String> from, RoomMessage message)
        {
            if (message instanceof DrainAck) {
                ack.complete(from);
            }
        }

        @Override
        public void ready(String room, ReleasePolicy policy)
        {
            ready(room).complete(policy);
        }

        @Override
        public void lost(String room, FailureCause cause, String reason)
        {
        }

        @Override
        public void fenced(String room, String how)
        {
        }

        @Override
        public List<String> on(DecodeToPrefillLinks.Link<String> link)
        {
            return List.of();
        }
    }

    public static TransferBackend backend()
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
                return new TransferPeer()
                {
                    @Override
                    public String transport()
                    {
                        return "idle";
                    }

                    @Override
                    public PageGeometry receiverGeometry()
                    {
                        return POOL;
                    }

                    @Override
                    public Set<TransferCapability> capabilities()
                    {
                        return Set.of(TransferCapability.DRAIN_ACK, TransferCapability.ONE_SIDED);
                    }

                    @Override
                    public void send(PlanWork work)
                    {
                        work.failed(new io.handoff.spi.transfer.TransferFailure("this test sends nothing", false));
                    }

                    @Override
                    public void close()
                    {
                    }
                };
            }

            @Override
            public void close()
            {
            }
        };
    }

    public static DisaggregationConfig config()
    {
        return new DisaggregationConfig("idle", "off", "127.0.0.1", 0, ControlChannelTest.LIVENESS, WAIT, RoomDeadlines.DEFAULT, 8,
                TransferLink.Timeouts.DEFAULT, false);
    }

    private PrefillToDecodeLinks prefill()
            throws Exception
    {
        PrefillToDecodeLinks links = new PrefillToDecodeLinks(config(), HERE, "idle", backend(), new EarlySend("off", false, "off"), POOL, TransferHooks.NONE,
                clock, new TransferStats(), new PrefillToDecodeLinks.Rooms()
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

    private DecodeToPrefillLinks<String> decode()
    {
        DecodeToPrefillLinks<String> links = new DecodeToPrefillLinks<>(config(), HERE, "idle", backend(), List.of(), null, (room, page, count) -> null, clock,
                new TransferStats(), heard);
        resources.add(links);
        return links;
    }
}
