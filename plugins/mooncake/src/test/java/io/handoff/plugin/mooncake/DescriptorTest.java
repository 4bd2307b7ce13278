package io.handoff.plugin.mooncake;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DescriptorTest
{
    private static final List<Descriptor.Shape> FILE_REGIONS = List.of(new Descriptor.Shape(0, 65536, 1024), new Descriptor.Shape(65536, 32768, 512));

    @Test
    void roundTripsWithAndWithoutASharedFileBehindAVersionByte()
    {
        Descriptor withFile = new Descriptor("host-a", "127.0.0.1", 40001, 4 << 20, Optional.of(Path.of("/dev/shm/handoff-kv")), FILE_REGIONS);
        Descriptor anonymous = new Descriptor("host-b", "10.0.0.2", 5, 1 << 30, Optional.empty(),
                List.of(new Descriptor.Shape(-1, 4096, 4096)));

        for (Descriptor descriptor : List.of(withFile, anonymous)) {
            byte[] bytes = descriptor.encode();
            assertThat(bytes[0]).isEqualTo(Descriptor.VERSION);
            assertThat(Descriptor.decode(bytes)).isEqualTo(descriptor);
        }
    }

    @Test
    void refusesOtherVersionsTruncationAndTrailingBytes()
    {
        byte[] bytes = new Descriptor("host-a", "127.0.0.1", 1, 4096, Optional.empty(), FILE_REGIONS).encode();
        byte[] otherVersion = bytes.clone();
        otherVersion[0] = 2;

        assertThatThrownBy(() -> Descriptor.decode(otherVersion)).hasMessageContaining("not a mooncake descriptor of version 1");
        assertThatThrownBy(() -> Descriptor.decode(new byte[0])).hasMessageContaining("first byte missing");
        assertThatThrownBy(() -> Descriptor.decode(Arrays.copyOf(bytes, bytes.length - 3))).hasMessageContaining("truncated");
        assertThatThrownBy(() -> Descriptor.decode(Arrays.copyOf(bytes, bytes.length + 1))).hasMessageContaining("1 trailing bytes");
    }

    @Test
    void aSharedFileNeedsEveryRegionsOffset()
    {
        assertThatThrownBy(() -> new Descriptor("h", "127.0.0.1", 1, 4096, Optional.of(Path.of("/dev/shm/x")),
                List.of(new Descriptor.Shape(-1, 4096, 1024))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("region 0 has no offset in the shared file");
    }
}
