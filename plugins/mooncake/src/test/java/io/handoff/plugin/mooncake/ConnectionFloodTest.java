package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.ClusterContext;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.handoff.plugin.mooncake.TcpTransferTest.readsUntilClosed;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A flood of silent connections on the tcp data port: beyond the per-address cap each is closed on arrival, the ones
 * held are dropped at their hello deadline, every refusal is reported by kind, and afterwards a peer that says its
 * hello is answered as before.
 */
class ConnectionFloodTest
{
    private static final int PER_ADDRESS = 4;

    @TempDir
    Path folder;

    @Test
    void connectionsBeyondTheCapAreClosedOnArrivalTheHeldOnesAtTheirDeadlineAndAHelloIsStillAnswered()
            throws Exception
    {
        ClusterContext context = new ClusterContext(new RecordingContext("decode-host", folder), Optional.empty(), "mooncake", 256, PER_ADDRESS);
        MooncakeProvider provider = new MooncakeProvider();
        MooncakeConfig config = MooncakeConfig.from(ReferenceSettings.of(provider).with(Map.of("transport", "tcp", "connect-timeout", "500ms")));
        try (Pool pool = Pool.anonymous();
                TcpReceiver receiver = TcpReceiver.start(pool.regions(), WriteGuard.ALLOW_ALL, config, context)) {
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", receiver.port());
            List<SocketChannel> held = new ArrayList<>();
            for (int i = 0; i < PER_ADDRESS; i++) {
                held.add(SocketChannel.open(address));
            }
            List<SocketChannel> beyond = new ArrayList<>();
            for (int i = 0; i < 3 * PER_ADDRESS; i++) {
                beyond.add(SocketChannel.open(address));
            }
            for (SocketChannel channel : beyond) {
                assertThat(readsUntilClosed(channel)).as("closed on arrival, beyond the per-address cap").isTrue();
                channel.close();
            }
            // the held ones say nothing: each is dropped at its hello deadline, however many others came meanwhile
            for (SocketChannel channel : held) {
                assertThat(readsUntilClosed(channel)).isTrue();
                channel.close();
            }
            assertThat(context.refusals()).filteredOn(refusal -> refusal.startsWith("127.0.0.1: limit: ")).hasSize(3 * PER_ADDRESS);
            assertThat(context.refusals()).filteredOn(refusal -> refusal.startsWith("127.0.0.1: hello-timeout: ")).hasSize(PER_ADDRESS);

            // after the flood a peer that speaks is served: its hello is answered
            try (SocketChannel peer = SocketChannel.open(address)) {
                ByteBuffer hello = WireFormat.hello();
                while (hello.hasRemaining()) {
                    peer.write(hello);
                }
                ByteBuffer answer = ByteBuffer.allocate(WireFormat.HELLO_BYTES);
                while (answer.hasRemaining() && peer.read(answer) >= 0) {
                    // reads until the whole answer is in, or the receiver closes
                }
                answer.flip();
                assertThat(WireFormat.isHello(answer)).isTrue();
            }
        }
    }
}
