package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real TCP on loopback. Nothing here sleeps to make something happen: loss is provoked by moving a manual
 * clock and calling the liveness check, or by really closing a socket; waiting is only for a message or a
 * close that has already been caused, with a generous bound.
 */
public class ControlChannelTest
{
    static final Duration WAIT = Duration.ofSeconds(20);
    public static final ControlChannel.Liveness LIVENESS = new ControlChannel.Liveness(Duration.ofSeconds(2), Duration.ofSeconds(10));
    static final RoomKey ROOM = new RoomKey(1, 0);

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final List<AutoCloseable> resources = new ArrayList<>();

    /** Records what a side hears. */
    public static final class Recorder
            implements ControlChannel.Listener
    {
        final BlockingQueue<ControlMessage> messages = new LinkedBlockingQueue<>();
        final BlockingQueue<ControlChannel> opened = new LinkedBlockingQueue<>();
        final CompletableFuture<String> closed = new CompletableFuture<>();
        final AtomicInteger closes = new AtomicInteger();

        @Override
        public void opened(ControlChannel channel)
        {
            opened.add(channel);
        }

        @Override
        public void received(ControlChannel channel, ControlMessage message)
        {
            messages.add(message);
        }

        @Override
        public void closed(ControlChannel channel, String reason)
        {
            closes.incrementAndGet();
            closed.complete(reason);
        }

        ControlMessage next()
                throws InterruptedException
        {
            ControlMessage message = messages.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(message).as("a message within " + WAIT).isNotNull();
            return message;
        }

        ControlChannel nextChannel()
                throws InterruptedException
        {
            ControlChannel channel = opened.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            assertThat(channel).as("a connection within " + WAIT).isNotNull();
            return channel;
        }

        String closeReason()
                throws Exception
        {
            return closed.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @AfterEach
    void closeAll()
            throws Exception
    {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    private ControlServer server(Recorder recorder)
            throws IOException
    {
        ControlServer server = ControlServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), LIVENESS, clock, recorder);
        resources.add(server);
        return server;
    }

    private ControlChannel connect(ControlServer server, Recorder recorder)
            throws IOException
    {
        ControlChannel channel = ControlChannel.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()),
                Duration.ofSeconds(10), LIVENESS, clock, recorder);
        resources.add(channel);
        return channel;
    }

    @Test
    void messagesArriveInOrderInBothDirectionsOnAnEphemeralPort()
            throws Exception
    {
        Recorder serverSide = new Recorder();
        Recorder clientSide = new Recorder();
        ControlServer server = server(serverSide);
        assertThat(server.port()).isPositive();
        ControlChannel client = connect(server, clientSide);
        ControlChannel accepted = serverSide.nextChannel();

        for (int i = 0; i < 100; i++) {
            assertThat(client.send(new ChunkDone(ROOM, i, i, 1))).isTrue();
        }
        for (int i = 0; i < 100; i++) {
            assertThat(serverSide.next()).isEqualTo(new ChunkDone(ROOM, i, i, 1));
        }
        assertThat(accepted.send(new DrainAck(ROOM))).isTrue();
        assertThat(clientSide.next()).isEqualTo(new DrainAck(ROOM));
        assertThat(server.channels()).containsExactly(accepted);
    }

    @Test
    void sendsFromManyThreadsNeverInterleaveFrames()
            throws Exception
    {
        Recorder serverSide = new Recorder();
        ControlServer server = server(serverSide);
        ControlChannel client = connect(server, new Recorder());
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int thread = t;
            threads.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 200; i++) {
                    client.send(new RoomFailed(new RoomKey(thread, i), FailureCause.PEER_LOST, "r".repeat(i)));
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        int[] nextPerThread = new int[4];
        for (int i = 0; i < 800; i++) {
            RoomFailed failed = (RoomFailed) serverSide.next();
            int thread = (int) failed.room().roomId();
            assertThat(failed.room().generation()).isEqualTo(nextPerThread[thread]++);
            assertThat(failed.reason()).hasSize(failed.room().generation());
        }
    }

    @Test
    void silentPeerIsDeclaredLostOnlyAfterThePeerTimeout()
            throws Exception
    {
        Recorder clientSide = new Recorder();
        ControlServer server = server(new Recorder());
        ControlChannel client = connect(server, clientSide);

        clock.advance(LIVENESS.peerTimeout().minusNanos(1));
        assertThat(client.checkLiveness()).isTrue();
        clock.advance(Duration.ofNanos(1));
        assertThat(client.checkLiveness()).isFalse();

        assertThat(client.isOpen()).isFalse();
        assertThat(clientSide.closeReason()).startsWith("no frame from ").endsWith("for 10000 ms (peer timeout 10000 ms)");
        assertThat(client.closeReason()).contains(clientSide.closeReason());
        assertThat(client.send(new DrainAck(ROOM))).isFalse();
        client.close();
        assertThat(clientSide.closes).hasValue(1);
    }

    @Test
    void heartbeatsKeepAnIdleConnectionAlive()
            throws Exception
    {
        Recorder serverSide = new Recorder();
        ControlServer server = server(serverSide);
        ControlChannel client = connect(server, new Recorder());
        ControlChannel accepted = serverSide.nextChannel();

        clock.advance(Duration.ofSeconds(6));
        client.tick();
        // frames arrive in order: once this marker is in, the heartbeat before it was read at t=6s
        client.send(new DrainAck(ROOM));
        assertThat(serverSide.next()).as("heartbeats are not handed to the listener").isEqualTo(new DrainAck(ROOM));
        assertThat(serverSide.messages).isEmpty();

        clock.advance(Duration.ofSeconds(6));
        assertThat(accepted.checkLiveness()).as("last frame 6 s ago").isTrue();
        clock.advance(Duration.ofSeconds(4));
        assertThat(accepted.checkLiveness()).as("last frame 10 s ago").isFalse();
    }

    @Test
    void tickSendsAHeartbeatOnlyWhenNothingWasSentForAnInterval()
            throws Exception
    {
        ControlServer server = server(new Recorder());
        ControlChannel client = connect(server, new Recorder());

        clock.advance(Duration.ofSeconds(1));
        client.tick();
        assertThat(client.heartbeatsSent()).isZero();
        clock.advance(Duration.ofSeconds(1));
        client.tick();
        assertThat(client.heartbeatsSent()).isOne();
        clock.advance(Duration.ofSeconds(1));
        // any frame counts: a busy channel needs no heartbeats
        client.send(new DrainAck(ROOM));
        clock.advance(Duration.ofSeconds(1));
        client.tick();
        assertThat(client.heartbeatsSent()).isOne();
        clock.advance(Duration.ofSeconds(1));
        client.tick();
        assertThat(client.heartbeatsSent()).isEqualTo(2);
    }

    @Test
    void closedSocketIsReportedToThePeerOnce()
            throws Exception
    {
        Recorder serverSide = new Recorder();
        ControlServer server = server(serverSide);
        ControlChannel client = connect(server, new Recorder());
        serverSide.nextChannel();

        client.close();

        assertThat(serverSide.closeReason()).contains("closed the connection");
        assertThat(serverSide.closes).hasValue(1);
        assertThat(server.channels()).isEmpty();
    }

    @Test
    void serverShutdownClosesItsChannelsAndThePeersHearIt()
            throws Exception
    {
        Recorder serverSide = new Recorder();
        Recorder clientSide = new Recorder();
        ControlServer server = server(serverSide);
        connect(server, clientSide);
        serverSide.nextChannel();

        server.close();

        assertThat(serverSide.closeReason()).isEqualTo("control server shut down");
        assertThat(clientSide.closeReason()).contains("closed the connection");
    }

    @Test
    void malformedFrameOrBadLengthClosesTheChannelWithTheReason()
            throws Exception
    {
        for (int[] frame : new int[][] {{5, 99, 1, 2, 3, 4}, {-1}, {ControlCodec.MAX_FRAME_BYTES + 1}, {0}}) {
            Recorder serverSide = new Recorder();
            ControlServer server = server(serverSide);
            try (Socket raw = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
                serverSide.nextChannel();
                // one write: the reader refuses an unknown type as soon as it reads it, and may close before later bytes
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(raw.getOutputStream()));
                out.writeInt(frame[0]);
                for (int i = 1; i < frame.length; i++) {
                    out.writeByte(frame[i]);
                }
                out.flush();
                String reason = serverSide.closeReason();
                assertThat(reason).startsWith("malformed frame from ");
                if (frame.length > 1) {
                    assertThat(reason).contains("unknown message type 99");
                }
                else {
                    assertThat(reason).contains("length " + frame[0] + " is outside 1.." + ControlCodec.MAX_FRAME_BYTES);
                }
            }
        }
    }

    @Test
    void handshakeRefusesAnIncompatiblePeerNamingBothValues()
            throws Exception
    {
        Compatibility decode = new Compatibility("tiny-mla", "seed:1", "MLA", "BF16", 16, ControlMessage.PROTOCOL_VERSION);
        Compatibility prefill = new Compatibility("tiny-mla", "seed:1", "MLA", "BF16", 32, ControlMessage.PROTOCOL_VERSION);
        // the prefill answers every hello with its judgement
        ControlChannel.Listener prefillSide = new ControlChannel.Listener()
        {
            @Override
            public void received(ControlChannel channel, ControlMessage message)
            {
                if (message instanceof Hello hello) {
                    channel.send(prefill.judge(hello, Role.DECODE));
                }
            }

            @Override
            public void closed(ControlChannel channel, String reason) {}
        };
        ControlServer server = ControlServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), LIVENESS, clock, prefillSide);
        resources.add(server);
        Recorder decodeSide = new Recorder();
        ControlChannel channel = connect(server, decodeSide);

        channel.send(new Hello(ControlMessage.PROTOCOL_VERSION, "decode-1", Role.DECODE, decode));

        assertThat(decodeSide.next()).isEqualTo(HelloResult.refused("incompatible peer: page size is '32' here but '16' on the peer. "
                + "Prefill and decode must serve the same model and weights with the same KV layout, dtype and page size. (peer decode-1)"));
    }
}
