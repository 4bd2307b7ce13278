package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.handoff.plugin.mooncake.Link.pagesOf;
import static io.handoff.plugin.mooncake.Link.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What only the tcp transport does: the receiver asks its write guard, refuses, and survives peers that break the protocol. */
class TcpTransferTest
{
    private static final RoomKey ROOM = new RoomKey(7, 1);
    private static final RoomKey NEXT_ROOM = new RoomKey(8, 0);

    @TempDir
    Path folder;

    @Test
    void aRefusedWriteFailsThePlanWithTheGuardsReasonLandsNothingAndKeepsTheConnection()
            throws Exception
    {
        WriteGuard retiredRoom = (room, page, count) -> room.equals(ROOM) ? null : () -> {};
        try (Link link = Link.open(Transport.TCP, folder, retiredRoom, "max-frame-bytes", "8KiB")) {
            Outcome refused = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 40, 8}, new int[] {10, 50, 3}));

            Outcome.Result result = refused.await();
            assertThat(result.failure()).isEqualTo("the receiver refused pages 40..47 of room 7#1: not granted");
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
            assertThat(link.peer.drain(ROOM)).succeedsWithin(java.time.Duration.ofSeconds(30));

            TransferPlan next = plan(NEXT_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 40, 8});
            assertThat(link.post(next).await().completed()).isTrue();
            assertThat(link.destination.mismatches(pagesOf(next))).isEmpty();
            assertThat(refused.calls()).isEqualTo(1);
        }
    }

    @Test
    void theReceiverAsksTheGuardForEveryFrameWithTheRoomAndDestinationPages()
            throws Exception
    {
        List<String> asked = new CopyOnWriteArrayList<>();
        WriteGuard recording = (room, page, count) -> asked.add(room + " " + page + "+" + count) ? () -> {} : null;
        try (Link link = Link.open(Transport.TCP, folder, recording)) {
            // Frames hold 4 pages of the largest stride: pages 8..13 go as 8+4 and 12+2, in each of the three regions.
            assertThat(link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 8, 6})).await().completed()).isTrue();

            assertThat(asked).containsExactly("7#1 8+4", "7#1 8+4", "7#1 8+4", "7#1 12+2", "7#1 12+2", "7#1 12+2");
        }
    }

    @Test
    void aReceiverThatGoesAwayFailsThePlanInFlightAndThePeerStopsSending()
            throws Exception
    {
        try (Link link = Link.open(Transport.TCP, folder)) {
            CountDownLatch parked = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            link.senderContext.onAfterPage((room, page) -> {
                if (page == 1) {
                    parked.countDown();
                    awaitQuietly(release);
                }
            });
            Outcome inFlight = link.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 12}));
            assertThat(parked.await(30, TimeUnit.SECONDS)).isTrue();

            link.receiver.close();
            release.countDown();

            assertThat(inFlight.await().failure()).isNotBlank();
            // The receiver's end of stream proved its connection thread stopped writing: the drain holds.
            assertThat(link.peer.drain(ROOM).get(30, TimeUnit.SECONDS)).isNull();
            Outcome later = link.post(plan(NEXT_ROOM, 0, 0, ProducerFence.DONE, new int[] {20, 20, 1}));
            assertThat(later.await().failure()).contains("lost its connection");
        }
    }

    @Test
    void aReceiverThatNeverAnswersFailsThePlanAndNoDrainIsPromisedAfterwards()
            throws Exception
    {
        try (ServerSocketChannel silent = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                Pool source = Pool.anonymous().fillSource();
                MooncakeBackend sender = new MooncakeBackend(new TestContext("prefill-host", folder),
                        MooncakeConfig.from(TestSettings.with("transport", "tcp", "ack-timeout", "200ms")))) {
            // Answers the hello, then swallows every frame and never replies nor closes: a stalled receiver.
            CountDownLatch testOver = new CountDownLatch(1);
            Thread swallower = Thread.ofPlatform().daemon().start(() -> swallow(silent, testOver));
            Descriptor descriptor = new Descriptor("decode-host", "127.0.0.1", ((InetSocketAddress) silent.getLocalAddress()).getPort(),
                    4096, Optional.empty(), source.regions().stream().map(Descriptor.Shape::of).toList());
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect("decode-host", descriptor.encode());

            Outcome outcome = new Outcome();
            peer.post(plan(ROOM, 0, 0, ProducerFence.DONE, new int[] {0, 0, 3}), outcome);

            assertThat(outcome.await().failure()).contains("did not answer").contains("did not confirm");
            assertThatThrownBy(() -> peer.drain(ROOM).get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasMessageContaining("cannot prove that no write of room 7#1 is in flight");
            Outcome later = new Outcome();
            peer.post(plan(NEXT_ROOM, 0, 0, ProducerFence.DONE, new int[] {5, 5, 1}), later);
            assertThat(later.await().failure()).contains("lost its connection");
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
        try (Link link = Link.open(Transport.TCP, folder);
                SocketChannel stranger = SocketChannel.open(new InetSocketAddress("127.0.0.1", link.tcpReceiver().port()))) {
            stranger.write(ByteBuffer.wrap("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));

            assertThat(readsUntilClosed(stranger)).isTrue();
            assertThat(link.tcpReceiver().lastRejection()).contains("not a mooncake hello");
            assertThat(link.destination.mismatches(Map.of())).isEmpty();
        }
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

    private static void awaitQuietly(CountDownLatch latch)
    {
        try {
            latch.await(30, TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
