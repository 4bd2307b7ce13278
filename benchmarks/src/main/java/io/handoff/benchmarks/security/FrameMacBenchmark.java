package io.handoff.benchmarks.security;

import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterSecret;
import io.handoff.core.security.FrameMac;
import io.handoff.core.security.Session;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The frame tag of an authenticated connection (HMAC-SHA256 over the frame's sequence number, length and bytes), on a
 * session from a real cluster handshake over loopback: a control frame from a byte array ({@code tag}), and a data
 * frame fed from a direct buffer as a backend does from its pool ({@code tagDirect}). The reference is plain
 * HMAC-SHA256 of the same bytes under a key of the same length, so the ratio is what the frame's position and length
 * add.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class FrameMacBenchmark
{
    /** Frame bytes: a control message, a 4 KiB frame, a 1 MiB data frame. */
    @Param({"64", "4096", "1048576"})
    public int frameBytes;

    private FrameMac sending;
    private byte[] frame;
    private ByteBuffer directFrame;
    private Mac reference;

    @Setup
    public void setUp()
            throws IOException, GeneralSecurityException
    {
        SplittableRandom random = new SplittableRandom(11);
        byte[] key = new byte[32];
        random.nextBytes(key);
        sending = handshake(ClusterSecret.of(key)).sending();
        frame = new byte[frameBytes];
        random.nextBytes(frame);
        directFrame = ByteBuffer.allocateDirect(frameBytes).put(frame).flip();
        reference = Mac.getInstance("HmacSHA256");
        reference.init(new SecretKeySpec(key, "HmacSHA256"));
    }

    @Benchmark
    public byte[] tag()
    {
        return sending.tag(frame, frameBytes);
    }

    @Benchmark
    public byte[] tagDirect()
    {
        return sending.next(frameBytes).update(directFrame).value();
    }

    @Benchmark
    public byte[] hmacReference()
    {
        reference.update(frame, 0, frameBytes);
        return reference.doFinal();
    }

    // the connecting side's session of a transfer connection; both sockets close once the keys are derived
    private static Session handshake(ClusterSecret secret)
            throws IOException
    {
        Duration timeout = Duration.ofSeconds(10);
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> accepted = CompletableFuture.runAsync(() -> {
                try (Socket socket = server.accept()) {
                    ClusterHandshake.transfer(socket, secret, "benchmark", false, timeout);
                }
                catch (IOException e) {
                    throw new IllegalStateException("the benchmark's handshake failed on the accepting side: " + e.getMessage(), e);
                }
            });
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
                Session session = ClusterHandshake.transfer(socket, secret, "benchmark", true, timeout);
                accepted.join();
                return session;
            }
        }
    }
}
