package io.handoff.bench.attention;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ForkJoinPool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class ReadBandwidthTest
{
    @Test
    void theStreamingKernelReadsEveryFloatOfTheBufferOnEveryThreadCount()
    {
        ForkJoinPool pool = new ForkJoinPool(3);
        try (ReadBandwidth one = new ReadBandwidth(3 << 20, pool, 1, 5);
                ReadBandwidth three = new ReadBandwidth(3 << 20, pool, 3, 5)) {
            double expected = scalarSum(one);

            assertThat(one.sum()).isCloseTo(expected, within(1e-3 * Math.abs(expected) + 1e-2));
            assertThat(three.sum()).isCloseTo(expected, within(1e-3 * Math.abs(expected) + 1e-2));
            assertThat(one.measure()).isPositive().isFinite();
            assertThat(one.lastSum()).isEqualTo(one.sum());
        }
        finally {
            pool.shutdown();
        }
    }

    private static double scalarSum(ReadBandwidth bandwidth)
    {
        MemorySegment segment = bandwidth.bufferForTests();
        double total = 0;
        for (long i = 0; i < segment.byteSize() / Float.BYTES; i++) {
            total += segment.getAtIndex(ValueLayout.JAVA_FLOAT, i);
        }
        return total;
    }

    @Test
    void aBufferTooSmallForItsThreadsIsRefused()
    {
        ForkJoinPool pool = new ForkJoinPool(1);
        try {
            assertThatThrownBy(() -> new ReadBandwidth(64, pool, 4, 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("too small for 4 threads");
        }
        finally {
            pool.shutdown();
        }
    }
}
