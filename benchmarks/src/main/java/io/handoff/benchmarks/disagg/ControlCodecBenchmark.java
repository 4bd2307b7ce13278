package io.handoff.benchmarks.disagg;

import io.handoff.core.disagg.control.ControlCodec;
import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.spi.transfer.RoomKey;
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

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * The disaggregation control codec on a room request (the decode's destination page list, 4 bytes a page: the
 * largest frame a room sends). The references are the least an encoder or decoder of the page list must do: the same
 * pages written into, or read out of, a big-endian byte array in bulk. {@link ChunkDoneCodecBenchmark} has the small
 * per-chunk frame.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class ControlCodecBenchmark
{
    private static final RoomKey ROOM = new RoomKey(42, 3);

    /** Destination pages in the room request: a 256-token prompt, a 16k-token one, a 1M-token one (page size 16). */
    @Param({"16", "1024", "65536"})
    public int pages;

    private RoomRequest request;
    private byte[] requestFrame;
    private int[] pageList;
    private byte[] pageBytes;

    @Setup
    public void setUp()
    {
        pageList = IntStream.range(0, pages).map(i -> 3 * i + 1).toArray();
        request = new RoomRequest(ROOM, "chatcmpl-4f1c2a9e0b7d4e3a", pages * 16, pageList);
        requestFrame = ControlCodec.encode(request);
        pageBytes = new byte[4 * pages];
        ByteBuffer.wrap(pageBytes).asIntBuffer().put(pageList);
    }

    @Benchmark
    public byte[] encodeRoomRequest()
    {
        return ControlCodec.encode(request);
    }

    @Benchmark
    public ControlMessage decodeRoomRequest()
            throws MalformedFrameException
    {
        return ControlCodec.decode(requestFrame);
    }

    @Benchmark
    public byte[] writePagesReference()
    {
        byte[] bytes = new byte[4 * pages];
        ByteBuffer.wrap(bytes).asIntBuffer().put(pageList);
        return bytes;
    }

    @Benchmark
    public int[] readPagesReference()
    {
        int[] read = new int[pages];
        ByteBuffer.wrap(pageBytes).asIntBuffer().get(read);
        return read;
    }
}
