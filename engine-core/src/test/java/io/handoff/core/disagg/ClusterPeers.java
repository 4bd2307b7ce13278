package io.handoff.core.disagg;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlChannelTest;
import io.handoff.core.disagg.control.ControlCodec;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlSecurity;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.control.PeerProcess;
import io.handoff.core.disagg.control.ProcessCheck;
import io.handoff.core.disagg.peer.DecodeToPrefillLinks;
import io.handoff.core.disagg.peer.DisaggregationConfig;
import io.handoff.core.disagg.peer.PrefillToDecodeLinks;
import io.handoff.core.disagg.peer.TransferStats;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.ClusterSecurity;
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

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Fixtures for the security tests of the control connections: a prefill's {@link PrefillToDecodeLinks} and a decode's
 * {@link DecodeToPrefillLinks} with given security, over real TCP on loopback, and a raw socket that speaks whatever bytes a
 * test forges.
 */
public final class ClusterPeers
        implements AutoCloseable
{
    static final Duration WAIT = Duration.ofSeconds(20);
    static final ClusterSecret SECRET = ClusterSecret.of("the cluster's secret, 32 bytes!!".getBytes());
    static final ClusterSecret OTHER = ClusterSecret.of("another cluster's secret, 32 b!!".getBytes());
    static final Compatibility HERE = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));
    static final Compatibility OTHER_MODEL = Compatibility.of("tiny-gqa", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));

    final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    /** How often the prefill's backend was asked to connect to a decode's regions. */
    final AtomicInteger connects = new AtomicInteger();
    private final List<AutoCloseable> resources = new ArrayList<>();

    /** Waits (bounded) for a condition another thread brings about; never to make something happen. */
    public static void await(String what, java.util.function.BooleanSupplier condition)
    {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WAIT + ": " + what);
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }

    static ControlSecurity secured(ClusterSecret secret)
    {
        return ControlSecurity.of(ClusterSecurity.withSecret(secret));
    }

    static DisaggregationConfig config(String backendId)
    {
        return new DisaggregationConfig(backendId, "off", "127.0.0.1", 0, ControlChannelTest.LIVENESS, WAIT, RoomDeadlines.DEFAULT, 8,
                TransferLink.Timeouts.DEFAULT, false);
    }

    /** A backend that exposes a token descriptor and refuses to connect: nothing here gets past region registration. */
    TransferBackend backend()
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
                connects.incrementAndGet();
                throw new IllegalStateException("this test backend does not connect");
            }

            @Override
            public void close()
            {
            }
        };
    }

    PrefillToDecodeLinks prefill(ControlSecurity security)
            throws IOException
    {
        return prefill(security, PeerProcess.current(""), ProcessCheck.SYSTEM);
    }

    /** A prefill's links that answer hellos as {@code self} and questions about processes from {@code processes}. */
    PrefillToDecodeLinks prefill(ControlSecurity security, PeerProcess self, ProcessCheck processes)
            throws IOException
    {
        PrefillToDecodeLinks links = new PrefillToDecodeLinks(config("tcp"), HERE, "tcp", backend(), new EarlySend("off", false, "off"),
                new PageGeometry(List.of(), 0), TransferHooks.NONE, clock, new TransferStats(), security, self, processes, new PrefillToDecodeLinks.Rooms()
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

    /** A decode's links; {@link Lost} hears why each room lost its peer. */
    DecodeToPrefillLinks<String> decode(Compatibility compatibility, String backendId, ControlSecurity security, Lost lost)
    {
        DecodeToPrefillLinks<String> links = new DecodeToPrefillLinks<>(config(backendId), compatibility, backendId, backend(), List.of(), null,
                (room, page, count) -> null, clock, new TransferStats(), security, lost);
        resources.add(links);
        return links;
    }

    /** Why the room "room" lost its peer. */
    String lostReason(DecodeToPrefillLinks<String> decode, PrefillToDecodeLinks prefill, Lost lost)
            throws Exception
    {
        decode.join(decode.to(prefill.controlAddress()), "room");
        return lost.reason("room").get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    Raw raw(PrefillToDecodeLinks prefill)
            throws IOException
    {
        String address = prefill.controlAddress();
        Raw raw = new Raw(new Socket(InetAddress.getLoopbackAddress(), Integer.parseInt(address.substring(address.lastIndexOf(':') + 1))));
        resources.add(raw);
        return raw;
    }

    @Override
    public void close()
            throws Exception
    {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    static class Lost
            implements DecodeToPrefillLinks.Rooms<String>
    {
        private final Map<String, CompletableFuture<String>> reasons = new ConcurrentHashMap<>();

        CompletableFuture<String> reason(String room)
        {
            return reasons.computeIfAbsent(room, r -> new CompletableFuture<>());
        }

        @Override
        public void received(DecodeToPrefillLinks.Link<String> from, RoomMessage message)
        {
        }

        @Override
        public void ready(String room, ReleasePolicy policy)
        {
        }

        @Override
        public void lost(String room, FailureCause cause, String reason)
        {
            reason(room).complete(reason);
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

    /** A socket that sends whatever bytes a test forges, and reads what comes back. */
    static final class Raw
            implements AutoCloseable
    {
        final Socket socket;
        final DataOutputStream out;
        final DataInputStream in;

        Raw(Socket socket)
                throws IOException
        {
            this.socket = socket;
            socket.setSoTimeout(Math.toIntExact(WAIT.toMillis()));
            this.out = new DataOutputStream(socket.getOutputStream());
            this.in = new DataInputStream(socket.getInputStream());
        }

        void send(ControlMessage message)
                throws IOException
        {
            byte[] frame = ControlCodec.encode(message);
            sendFrame(frame);
        }

        void sendFrame(byte[] frame)
                throws IOException
        {
            out.writeInt(frame.length);
            out.write(frame);
            out.flush();
        }

        /** The next frame the peer sent, decoded. */
        ControlMessage receive()
                throws IOException
        {
            byte[] frame = new byte[in.readInt()];
            in.readFully(frame);
            return ControlCodec.decode(frame);
        }

        /** Whether the peer closed the connection (reading what is left until then). */
        boolean closedByPeer()
                throws IOException
        {
            try {
                while (in.read() >= 0) {
                    // what the peer said before closing
                }
                return true;
            }
            catch (EOFException | java.net.SocketException e) {
                return true;
            }
        }

        @Override
        public void close()
                throws IOException
        {
            socket.close();
        }
    }
}
