package io.handoff.plugin.mooncake;

import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.RecordingHooks;
import io.handoff.testkit.transfer.TransferBackendContract;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The transfer contract over tcp, and what only tcp does: the receiver asks its write guard frame by frame, says
 * which frame it refused, and survives peers that break the protocol.
 */
class TcpTransferTest
        extends TransferBackendContract
{
    /** tcp with frames of 4 KiB: four pages of the largest stride, so runs span several frames. */
    static final Map<String, String> TCP = Map.of("transport", "tcp", "max-frame-bytes", "4KiB");

    @Override
    protected TransferBackendProvider provider()
    {
        return new MooncakeProvider();
    }

    @Override
    protected Map<String, String> settings()
    {
        return TCP;
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

    @Test
    void aRefusedPlanNamesTheFirstRefusedFrameAndTheGuardsVerdict()
            throws Exception
    {
        WriteGuard retiredRoom = (room, page, count) -> room.equals(ROOM) ? null : () -> {};
        try (Link link = open(retiredRoom, "max-frame-bytes", "8KiB")) {
            Outcome refused = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 40, 8}, new int[] {10, 50, 3}));

            assertThat(refused.await().failure()).isEqualTo("the receiver refused pages 40..47 of room 7#1: not granted");
        }
    }

    @Test
    void theReceiverAsksTheGuardForEveryFrameWithTheRoomAndDestinationPages()
            throws Exception
    {
        List<String> asked = new CopyOnWriteArrayList<>();
        WriteGuard recording = (room, page, count) -> asked.add(room + " " + page + "+" + count) ? () -> {} : null;
        try (Link link = open(recording)) {
            // Frames hold 4 pages of the largest stride: pages 8..13 go as 8+4 and 12+2, in each of the three regions.
            assertThat(link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 6})).await().completed()).isTrue();

            assertThat(asked).containsExactly("7#1 8+4", "7#1 8+4", "7#1 8+4", "7#1 12+2", "7#1 12+2", "7#1 12+2");
        }
    }

    @Test
    void aReceiverThatGoesAwayFailsThePlanInFlightAndThePeerStopsSending()
            throws Exception
    {
        try (Link link = open()) {
            RecordingHooks.Park park = link.hooks().parkAfterPage(1);
            Outcome inFlight = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 12}));
            park.awaitParked();

            link.receiver().close();
            park.release();

            assertThat(inFlight.await().failure()).isNotBlank();
            // The receiver's end of stream proved its connection thread stopped writing: the drain holds.
            assertThat(link.drain(ROOM).get(30, TimeUnit.SECONDS)).isNull();
            Outcome later = link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 20, 1}));
            assertThat(later.await().failure()).contains("lost its connection");
        }
    }

    @Test
    void aReceiverThatNeverAnswersFailsThePlanAndNoDrainIsPromisedAfterwards()
            throws Exception
    {
        try (ServerSocketChannel silent = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                Pool source = Pool.anonymous().fill(0);
                TransferBackend sender = provider().open(new RecordingContext(Link.PREFILL_HOST, folder), settingsWith("ack-timeout", "200ms"))) {
            // Answers the hello, then swallows every frame and never replies nor closes: a stalled receiver.
            CountDownLatch testOver = new CountDownLatch(1);
            Thread swallower = Thread.ofPlatform().daemon().start(() -> swallow(silent, testOver));
            RecordingContext decodeContext = new RecordingContext(Link.DECODE_HOST, folder);
            byte[] pool = decodeContext.describePool(source.regions(), null);
            Descriptor descriptor = new Descriptor("127.0.0.1", ((InetSocketAddress) silent.getLocalAddress()).getPort(), 4096, pool,
                    decodeContext.readPool(pool));
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect(Link.DECODE_HOST, descriptor.encode());

            try (TransferLink link = Link.start("mooncake", peer, source.regions())) {
                Outcome outcome = new Outcome();
                link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 3}), outcome);

                assertThat(outcome.await().failure()).contains("did not answer").contains("did not confirm");
                assertThatThrownBy(() -> link.drain(ROOM).get(30, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .hasMessageContaining("cannot prove that no write of room 7#1 is in flight");
                Outcome later = new Outcome();
                link.post(plan(OTHER_ROOM, 0, 0, ProducerFence.DONE, new int[] {5, 5, 1}), later);
                assertThat(later.await().failure()).contains("lost its connection");
            }
            testOver.countDown();
            swallower.join(30_000);
        }
    }

    private static void swallow(ServerSocketChannel server, CountDownLatch testOver)
    {
        try (SocketChannel connection = server.accept()) {
            ByteBuffer hello = ByteBuffer.allocate(WireFormat.HELLO_BYTES);
            while (hello.hasRemaining() && connection.read(hello) >= 0) {
                // reading the hello
            }
            connection.write(WireFormat.hello());
            ByteBuffer sink = ByteBuffer.allocate(1 << 16);
            while (connection.read(sink.clear()) >= 0) {
                // swallowing frames
            }
            // The sender gave up its side; a stalled receiver still does not close its own.
            testOver.await();
        }
        catch (IOException | InterruptedException e) {
            // the test is over
        }
    }

    @Test
    void aClientThatDoesNotSpeakMooncakeIsDisconnectedAtTheHandshake()
            throws Exception
    {
        try (Link link = open();
                SocketChannel stranger = SocketChannel.open(new InetSocketAddress("127.0.0.1", tcpReceiver(link).port()))) {
            stranger.write(ByteBuffer.wrap("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));

            assertThat(readsUntilClosed(stranger)).isTrue();
            assertThat(tcpReceiver(link).lastRejection()).contains("not a mooncake hello");
            assertThat(link.destination().mismatches(Map.of())).isEmpty();
        }
    }

    static TcpReceiver tcpReceiver(Link link)
    {
        return ((MooncakeBackend) link.receiver()).receiver();
    }

    static boolean readsUntilClosed(SocketChannel channel)
    {
        ByteBuffer sink = ByteBuffer.allocate(4096);
        try {
            while (true) {
                sink.clear();
                if (channel.read(sink) < 0) {
                    return true;
                }
            }
        }
        catch (IOException e) {
            return true;
        }
    }
}
