package io.handoff.plugin.mooncake;

import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DescriptorTest
{
    private static final RecordingContext CONTEXT = new RecordingContext("host-a", Path.of(System.getProperty("java.io.tmpdir")));

    @Test
    void roundTripsWhereToDialAndTheCoresPoolDescriptionBehindAVersionByte()
    {
        try (Pool pool = Pool.anonymous()) {
            byte[] described = CONTEXT.describePool(pool.regions(), null);
            Descriptor descriptor = new Descriptor("127.0.0.1", 40001, 4 << 20, described, CONTEXT.readPool(described));

            byte[] bytes = descriptor.encode();
            Descriptor read = Descriptor.decode(bytes, CONTEXT);

            assertThat(bytes[0]).isEqualTo(Descriptor.VERSION);
            assertThat(List.of(read.host(), read.port(), read.maxFrameBytes())).containsExactly("127.0.0.1", 40001, 4L << 20);
            assertThat(read.pool()).isEqualTo(described);
            assertThat(read.description()).isEqualTo(descriptor.description());
            assertThat(read.hostId()).isEqualTo("host-a");
            assertThat(read.sharedFile()).isEmpty();
        }
    }

    @Test
    void refusesOtherVersionsTruncationAndTrailingBytes()
    {
        try (Pool pool = Pool.anonymous()) {
            byte[] described = CONTEXT.describePool(pool.regions(), null);
            byte[] bytes = new Descriptor("127.0.0.1", 1, 4096, described, CONTEXT.readPool(described)).encode();
            byte[] otherVersion = bytes.clone();
            otherVersion[0] = 1;

            assertThatThrownBy(() -> Descriptor.decode(otherVersion, CONTEXT)).hasMessageContaining("not a mooncake descriptor of version 2");
            assertThatThrownBy(() -> Descriptor.decode(new byte[0], CONTEXT)).hasMessageContaining("first byte missing");
            assertThatThrownBy(() -> Descriptor.decode(Arrays.copyOf(bytes, bytes.length - 3), CONTEXT)).hasMessageContaining("bytes follow");
            assertThatThrownBy(() -> Descriptor.decode(Arrays.copyOf(bytes, bytes.length + 1), CONTEXT)).hasMessageContaining("bytes follow");
            assertThatThrownBy(() -> Descriptor.decode(Arrays.copyOf(bytes, 5), CONTEXT)).hasMessageContaining("truncated");
        }
    }
}
