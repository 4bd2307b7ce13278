package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.handoff.plugin.mooncake.TcpTransferTest.readsUntilClosed;
import static io.handoff.plugin.mooncake.TcpTransferTest.tcpReceiver;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.params.provider.Arguments.argumentSet;

/**
 * A peer that sends a frame the exposed regions cannot hold loses its connection before a byte of the frame
 * is written, whatever the guard says (here: everything is admitted), and the receiver keeps serving others.
 */
class MalformedFrameTest
{
    private static final long STRIDE = Pool.STRIDES[0];

    @TempDir
    Path folder;

    /** One frame on the wire: header fields, then {@code body} bytes of zeros (never the canary). */
    record Frame(byte kind, long room, int generation, int chunk, int region, int page, int count, long length, int body)
    {
        static Frame data(int region, int page, int count, long length)
        {
            return new Frame(WireFormat.DATA, 7, 1, 0, region, page, count, length, (int) Math.max(0, Math.min(length, 1 << 16)));
        }
    }

    static Stream<Arguments> malformed()
    {
        return Stream.of(
                argumentSet("a region that was not exposed", List.of(Frame.data(5, 0, 1, STRIDE)), "names region 5"),
                argumentSet("a negative region", List.of(Frame.data(-1, 0, 1, STRIDE)), "names region -1"),
                argumentSet("pages past the region's end", List.of(Frame.data(0, Pool.PAGES - 2, 4, 4 * STRIDE)), "pages 62..65 of region 0"),
                argumentSet("a negative page", List.of(Frame.data(1, -1, 2, 2 * STRIDE)), "pages -1..0 of region 1"),
                argumentSet("no pages", List.of(Frame.data(0, 3, 0, 0)), "pages 3..2 of region 0"),
                argumentSet("more bytes than its pages", List.of(Frame.data(0, 0, 2, 3 * STRIDE)), "carries 3072 bytes for 2 pages of 1024 bytes"),
                argumentSet("fewer bytes than its pages", List.of(Frame.data(2, 0, 2, 2 * STRIDE)), "carries 2048 bytes for 2 pages of 512 bytes"),
                argumentSet("more than max-frame-bytes", List.of(Frame.data(0, 0, 8, 8 * STRIDE)), "max-frame-bytes"),
                argumentSet("a negative generation", List.of(new Frame(WireFormat.DATA, 7, -1, 0, 0, 0, 1, STRIDE, (int) STRIDE)), "generation -1"),
                argumentSet("an unknown kind", List.of(new Frame((byte) 9, 7, 1, 0, 0, 0, 1, STRIDE, (int) STRIDE)), "unknown frame kind 9"),
                argumentSet("an end that claims bytes never sent", List.of(new Frame(WireFormat.END, 7, 1, 0, 0, 0, 0, 4096, 0)), "ends claiming 4096 bytes after 0"),
                argumentSet("another room inside a plan", List.of(
                        new Frame(WireFormat.DATA, 7, 1, 0, 0, 0, 1, STRIDE, -1),
                        new Frame(WireFormat.DATA, 8, 0, 0, 0, 1, 1, STRIDE, (int) STRIDE)), "inside the plan of room 7#1"));
    }

    @ParameterizedTest
    @MethodSource("malformed")
    void isRejectedWithoutWritingAndTheReceiverServesOthers(List<Frame> frames, String reason)
            throws Exception
    {
        MooncakeProvider provider = new MooncakeProvider();
        try (Link link = Link.acrossHosts(provider, ReferenceSettings.of(provider).with(TcpTransferTest.TCP), folder, WriteGuard.ALLOW_ALL);
                SocketChannel raw = SocketChannel.open(new InetSocketAddress("127.0.0.1", tcpReceiver(link).port()))) {
            handshake(raw);
            try {
                for (Frame frame : frames) {
                    send(raw, frame);
                }
            }
            catch (IOException e) {
                // The receiver may close before the body is sent: that is the point.
            }

            assertThat(readsUntilClosed(raw)).isTrue();
            assertThat(tcpReceiver(link).lastRejection()).contains(reason);
            assertThat(link.destination().mismatches(Map.of())).isEmpty();

            TransferPlan plan = plan(new RoomKey(3, 0), 0, 0, ProducerFence.DONE, new int[] {0, 0, 5});
            assertThat(link.post(plan).await().completed()).isTrue();
            assertThat(link.destination().mismatches(pagesOf(plan))).isEmpty();
        }
    }

    private static void handshake(SocketChannel raw)
            throws IOException
    {
        writeFully(raw, WireFormat.hello());
        ByteBuffer answer = ByteBuffer.allocate(WireFormat.HELLO_BYTES);
        while (answer.hasRemaining()) {
            if (raw.read(answer) < 0) {
                throw new IOException("receiver closed during the handshake");
            }
        }
        assertThat(WireFormat.isHello(answer)).isTrue();
    }

    /** A body size of -1 sends a body of canary bytes, so a frame that is (rightly) written leaves the canary intact. */
    private static void send(SocketChannel raw, Frame frame)
            throws IOException
    {
        ByteBuffer header = ByteBuffer.allocate(WireFormat.HEADER_BYTES)
                .put(frame.kind()).put(new byte[3])
                .putLong(frame.room()).putInt(frame.generation()).putInt(frame.chunk())
                .putInt(frame.region()).putInt(frame.page()).putInt(frame.count()).putLong(frame.length())
                .flip();
        writeFully(raw, header);
        byte[] body = new byte[frame.body() < 0 ? (int) frame.length() : frame.body()];
        if (frame.body() < 0) {
            Arrays.fill(body, Pool.CANARY);
        }
        writeFully(raw, ByteBuffer.wrap(body));
    }

    private static void writeFully(SocketChannel raw, ByteBuffer buffer)
            throws IOException
    {
        while (buffer.hasRemaining()) {
            raw.write(buffer);
        }
    }
}
