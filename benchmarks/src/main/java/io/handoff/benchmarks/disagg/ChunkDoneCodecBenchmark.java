package io.handoff.benchmarks.disagg;

import io.handoff.core.disagg.control.ControlCodec;
import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.spi.transfer.RoomKey;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/** The control codec on the frame every chunk of every room sends (25 bytes): the codec's fixed cost per message. */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class ChunkDoneCodecBenchmark
{
    private final ChunkDone chunkDone = new ChunkDone(new RoomKey(42, 3), 2, 512, 16);
    private final byte[] frame = ControlCodec.encode(chunkDone);

    @Benchmark
    public byte[] encode()
    {
        return ControlCodec.encode(chunkDone);
    }

    @Benchmark
    public ControlMessage decode()
            throws MalformedFrameException
    {
        return ControlCodec.decode(frame);
    }
}
