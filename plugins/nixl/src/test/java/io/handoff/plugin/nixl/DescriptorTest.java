package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The handshake descriptor: what a receiver encodes decodes to the same, and anything else is refused with a reason. */
class DescriptorTest
{
    private static final Descriptor SAMPLE = new Descriptor(new byte[] {1, 2, 3, 4, 5}, List.of(
            new Descriptor.Region(0x7f00_0000_1000L, 64 * 1024, 1024, new byte[] {9, 8, 7}),
            new Descriptor.Region(0x7f00_0002_0000L, 64 * 512, 512, new byte[] {6, 5, 4, 3, 2, 1})));

    @TempDir
    Path folder;

    @Test
    void decodesWhatItEncodes()
    {
        Descriptor decoded = Descriptor.decode(SAMPLE.encode());

        assertThat(decoded.workerAddress()).containsExactly(1, 2, 3, 4, 5);
        assertThat(decoded.regions()).isEqualTo(SAMPLE.regions());
        assertThat(decoded.regions().get(1).pages()).isEqualTo(64);
        assertThat(decoded.encode()).isEqualTo(SAMPLE.encode());
    }

    @Test
    void refusesEveryTruncation()
    {
        byte[] bytes = SAMPLE.encode();
        for (int length = 0; length < bytes.length; length++) {
            byte[] truncated = Arrays.copyOf(bytes, length);
            assertThatThrownBy(() -> Descriptor.decode(truncated))
                    .as("first %d bytes", length)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("malformed nixl descriptor: ");
        }
    }

    @Test
    void refusesAnotherBackendsDescriptorAnotherVersionAndTrailingBytes()
    {
        byte[] mooncake = "mooncake descriptor".getBytes();
        assertThatThrownBy(() -> Descriptor.decode(mooncake)).hasMessageContaining("does not start with NIXL");

        byte[] future = SAMPLE.encode();
        future[4] = 2;
        assertThatThrownBy(() -> Descriptor.decode(future)).hasMessageContaining("version 2, this Handoff reads version 1");

        byte[] trailing = Arrays.copyOf(SAMPLE.encode(), SAMPLE.encode().length + 3);
        assertThatThrownBy(() -> Descriptor.decode(trailing)).hasMessageContaining("3 bytes after the last region");
    }

    @Test
    void refusesLengthsThatDoNotFitAndRegionsThatAreNotWholePages()
    {
        byte[] hugeAddress = SAMPLE.encode();
        ByteBuffer.wrap(hugeAddress).putInt(5, Integer.MAX_VALUE);
        assertThatThrownBy(() -> Descriptor.decode(hugeAddress)).hasMessageContaining("worker address of 2147483647 bytes");

        byte[] negativeCount = SAMPLE.encode();
        ByteBuffer.wrap(negativeCount).putInt(4 + 1 + 4 + 5, -1);
        assertThatThrownBy(() -> Descriptor.decode(negativeCount)).hasMessageContaining("-1 regions");

        byte[] ragged = SAMPLE.encode();
        // The first region's page stride: magic, version, address length and bytes, count, base, length.
        ByteBuffer.wrap(ragged).putLong(4 + 1 + 4 + 5 + 4 + 8 + 8, 1000);
        assertThatThrownBy(() -> Descriptor.decode(ragged)).hasMessageContaining("region 0").hasMessageContaining("1000-byte pages");
    }

    @Test
    void aBackendRefusesAMalformedDescriptorAndStillConnectsAGoodOne()
            throws Exception
    {
        Ucx.assumeAvailable();
        PluginSettings settings = ReferenceSettings.of(new NixlProvider()).with("tls", "tcp");
        try (Pool source = Pool.anonymous().fill(0);
                Pool destination = Pool.anonymous().fillCanary();
                Pool narrow = Pool.anonymous(Pool.PAGES, 1024, 1024)) {
            TransferBackend receiver = new NixlProvider().open(new RecordingContext("decode", folder), settings);
            TransferBackend otherReceiver = new NixlProvider().open(new RecordingContext("other-decode", folder), settings);
            TransferBackend sender = new NixlProvider().open(new RecordingContext("prefill", folder), settings);
            try {
                byte[] good = receiver.expose(destination.regions(), null, WriteGuard.ALLOW_ALL);
                assertThatThrownBy(() -> receiver.expose(destination.regions(), null, WriteGuard.ALLOW_ALL))
                        .hasMessageContaining("exposed its pool already");
                byte[] otherGeometry = otherReceiver.expose(narrow.regions(), null, WriteGuard.ALLOW_ALL);
                sender.registerSources(source.regions());

                assertThatThrownBy(() -> sender.connect("decode", Arrays.copyOf(good, good.length - 1)))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("malformed nixl descriptor: ");
                assertThatThrownBy(() -> sender.connect("other-decode", otherGeometry))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("the receiver exposed 2 regions, this sender has 3");

                assertThat(sender.connect("decode", good).transport()).isEqualTo("ucx:tcp");
            }
            finally {
                sender.close();
                otherReceiver.close();
                receiver.close();
            }
        }
    }
}
