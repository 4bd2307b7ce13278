package io.handoff.plugin.mooncake;

import io.handoff.core.security.ClusterSecret;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.ClusterContext;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.TransferBackendContract;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * mooncake tcp with a cluster secret: the whole backend contract over tagged frames, and a man in the middle on a real
 * loopback connection (a relay between sender and receiver) who flips a payload byte or replays a frame: either is
 * refused by its tag, the connection closes, the receiver reports the peer as refused, and the plan fails.
 */
class TaggedTcpTransferTest
        extends TransferBackendContract
{
    // a plan of one page of region 0 first sends one DATA frame: header, its tag, 1024 bytes of page, their tag
    private static final int FIRST_FRAME_BYTES = WireFormat.HEADER_BYTES + 32 + 1024 + 32;

    private Relay relay;

    @Override
    protected TransferBackendProvider provider()
    {
        return new MooncakeProvider();
    }

    @Override
    protected Map<String, String> settings()
    {
        return TcpTransferTest.TCP;
    }

    @Override
    protected boolean withClusterSecret()
    {
        return true;
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(RECEIVER_VALIDATED_WRITES, REMOTE, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, PIPELINED, TransferCapability.HEAD_SLICES);
    }

    @Override
    protected String expectedTransport()
    {
        return "tcp";
    }

    @AfterEach
    void closeRelay()
    {
        if (relay != null) {
            relay.close();
        }
    }

    @Test
    void framesThroughAnHonestRelayLandExactly()
            throws Exception
    {
        try (Link link = throughRelay()) {
            var moved = plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 6}, new int[] {20, 40, 1});

            assertThat(link.post(moved).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(moved))).isEmpty();
            assertThat(refusals(link)).isEmpty();
        }
    }

    @Test
    void aFlippedPayloadByteFailsItsTagClosesTheConnectionAndFailsThePlan()
            throws Exception
    {
        try (Link link = throughRelay()) {
            relay.flipByteAt(relay.upstreamBytes() + WireFormat.HEADER_BYTES + 32 + 100);

            Outcome outcome = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 1}));

            assertThat(outcome.await().failure()).isNotBlank();
            assertThat(refusals(link)).singleElement().asString().contains("a frame payload of room 7#1 fails its tag", "man in the middle");
            assertThat(relay.flipped()).isTrue();
            Outcome later = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {1, 9, 1}));
            assertThat(later.await().failure()).contains("lost its connection");
        }
    }

    @Test
    void aReplayedFrameFailsItsHeaderTagBeforeAnyOfItsFieldsIsUsed()
            throws Exception
    {
        try (Link link = throughRelay()) {
            // the first frame goes through, then the relay sends it again: a valid tag, in the wrong place of the sequence
            relay.replay(relay.upstreamBytes(), FIRST_FRAME_BYTES);

            Outcome outcome = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 1}));

            assertThat(outcome.await().failure()).isNotBlank();
            assertThat(refusals(link)).singleElement().asString().contains("a frame header of room 7#1 fails its tag", "replayed");
            assertThat(relay.replayed()).isTrue();
        }
    }

    @Test
    void aSenderWithAnotherSecretIsRefusedAtTheHandshakeBeforeAnyFrame()
            throws Exception
    {
        try (Link link = open(WriteGuard.ALLOW_ALL)) {
            int port = TcpTransferTest.tcpReceiver(link).port();
            try (Socket stranger = new Socket(InetAddress.getLoopbackAddress(), port)) {
                var foreign = new ClusterContext(new RecordingContext("elsewhere", folder),
                        ClusterSecret.of("not this cluster's secret".getBytes(StandardCharsets.UTF_8)), "mooncake");
                assertThatThrownBy(() -> foreign.authenticateConnection(stranger, true)).hasMessageContaining("the cluster secrets differ");
            }
        }
    }

    private Link throughRelay()
    {
        return Link.open(provider(), settingsWith(), folder, WriteGuard.ALLOW_ALL, false, Link.TIMEOUTS,
                Link.Wiring.AUTHENTICATED.withDescriptorOnTheWay(bytes -> {
                    Descriptor real = Descriptor.decode(bytes, new RecordingContext(Link.PREFILL_HOST, folder));
                    relay = Relay.to(real.host(), real.port());
                    return new Descriptor("127.0.0.1", relay.port(), real.maxFrameBytes(), real.pool(), real.description()).encode();
                }));
    }

    private static java.util.List<String> refusals(Link link)
    {
        return ((ClusterContext) link.receiverContext()).refusals();
    }

    /**
     * One connection relayed byte for byte, except that the sender's stream may have one byte flipped at an offset,
     * or one stretch sent twice. Both directions end when either does.
     */
    private static final class Relay
            implements AutoCloseable
    {
        private final ServerSocket server;
        private final String host;
        private final int targetPort;
        private volatile Socket fromSender;
        private volatile Socket toReceiver;
        private volatile long upstream;
        private volatile long flipAt = -1;
        private volatile long replayFrom = -1;
        private volatile int replayLength;
        private volatile boolean flipped;
        private volatile boolean replayed;

        private Relay(ServerSocket server, String host, int targetPort)
        {
            this.server = server;
            this.host = host;
            this.targetPort = targetPort;
        }

        static Relay to(String host, int port)
        {
            try {
                ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Relay relay = new Relay(server, host, port);
                Thread.ofPlatform().daemon().name("relay-accept").start(relay::accept);
                return relay;
            }
            catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        int port()
        {
            return server.getLocalPort();
        }

        /**
         * Bytes of the sender's stream relayed so far: all of the handshake and hello once the link is open, since the
         * relay counts bytes before it forwards them and the sender's hello is answered only after it arrived.
         */
        long upstreamBytes()
        {
            return upstream;
        }

        void flipByteAt(long offset)
        {
            flipAt = offset;
        }

        void replay(long from, int length)
        {
            replayLength = length;
            replayFrom = from;
        }

        boolean flipped()
        {
            return flipped;
        }

        boolean replayed()
        {
            return replayed;
        }

        private void accept()
        {
            try {
                fromSender = server.accept();
                toReceiver = new Socket();
                toReceiver.connect(new InetSocketAddress(host, targetPort));
                Thread.ofPlatform().daemon().name("relay-down").start(() -> copy(toReceiver, fromSender));
                upstream();
            }
            catch (IOException e) {
                // the link closed the connection; nothing more to relay
            }
            finally {
                close();
            }
        }

        private void upstream()
                throws IOException
        {
            InputStream in = fromSender.getInputStream();
            OutputStream out = toReceiver.getOutputStream();
            byte[] buffer = new byte[8192];
            byte[] copy = null;
            int n;
            while ((n = in.read(buffer)) >= 0) {
                long start = upstream;
                // counted before forwarded: once the receiver has seen a byte (and so the sender its answer), the count has it
                upstream = start + n;
                long flip = flipAt;
                if (flip >= start && flip < start + n) {
                    buffer[(int) (flip - start)] ^= 0x01;
                    flipped = true;
                }
                long from = replayFrom;
                if (from < 0 || replayed) {
                    out.write(buffer, 0, n);
                    continue;
                }
                if (copy == null) {
                    copy = new byte[replayLength];
                }
                // keep the bytes of [from, from + length) as they pass
                long lo = Math.max(from, start);
                long hi = Math.min(from + replayLength, start + n);
                if (lo < hi) {
                    System.arraycopy(buffer, (int) (lo - start), copy, (int) (lo - from), (int) (hi - lo));
                }
                if (start + n < from + replayLength) {
                    out.write(buffer, 0, n);
                    continue;
                }
                // the copy goes right after the stretch, before whatever the sender wrote next (one read may hold both)
                int end = (int) (from + replayLength - start);
                replayed = true;
                out.write(buffer, 0, end);
                out.write(copy);
                out.write(buffer, end, n - end);
            }
        }

        private void copy(Socket from, Socket to)
        {
            try {
                from.getInputStream().transferTo(to.getOutputStream());
            }
            catch (IOException e) {
                // one side went away
            }
            finally {
                close();
            }
        }

        @Override
        public void close()
        {
            for (AutoCloseable closeable : new AutoCloseable[] {server, fromSender, toReceiver}) {
                try {
                    if (closeable != null) {
                        closeable.close();
                    }
                }
                catch (Exception ignored) {
                    // closing
                }
            }
        }
    }
}
