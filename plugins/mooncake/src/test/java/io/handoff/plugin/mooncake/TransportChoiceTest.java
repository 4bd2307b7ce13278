package io.handoff.plugin.mooncake;

import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.EnumSet;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.PIPELINED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Which transport a peer gets, what it then promises, and the descriptor checks at connect. */
class TransportChoiceTest
{
    private static final String DECODE_HOST = "decode-host";
    private static final ReferenceSettings SETTINGS = ReferenceSettings.of(new MooncakeProvider());

    @TempDir
    Path folder;

    @Test
    void autoMapsThePoolFileOfAReceiverOnThisHost()
            throws Exception
    {
        try (Decode decode = new Decode(true);
                MooncakeBackend sender = sender("auto", DECODE_HOST);
                Pool source = Pool.anonymous().fill(0)) {
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect(DECODE_HOST, decode.descriptor);

            assertThat(peer.transport()).isEqualTo("shm");
            assertThat(peer.capabilities()).isEqualTo(EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, TransferCapability.HEAD_SLICES));
            assertLands(peer, source, decode.pool);
        }
    }

    @Test
    void autoUsesTcpForAReceiverOnAnotherHostEvenWithAPoolFile()
            throws Exception
    {
        try (Decode decode = new Decode(true);
                MooncakeBackend sender = sender("auto", "prefill-host");
                Pool source = Pool.anonymous().fill(0)) {
            sender.registerSources(source.regions());
            TransferPeer peer = sender.connect(DECODE_HOST, decode.descriptor);

            assertThat(peer.transport()).isEqualTo("tcp");
            assertThat(peer.capabilities()).isEqualTo(EnumSet.of(RECEIVER_VALIDATED_WRITES, REMOTE, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, PIPELINED, TransferCapability.HEAD_SLICES));
            assertLands(peer, source, decode.pool);
        }
    }

    @Test
    void autoUsesTcpForAReceiverOnThisHostWithoutAPoolFile()
            throws Exception
    {
        try (Decode decode = new Decode(false);
                MooncakeBackend sender = sender("auto", DECODE_HOST);
                Pool source = Pool.anonymous().fill(0)) {
            sender.registerSources(source.regions());

            assertThat(sender.connect(DECODE_HOST, decode.descriptor).transport()).isEqualTo("tcp");
        }
    }

    @Test
    void tcpIsUsedWhenForcedEvenOnOneHost()
            throws Exception
    {
        try (Decode decode = new Decode(true);
                MooncakeBackend sender = sender("tcp", DECODE_HOST);
                Pool source = Pool.anonymous().fill(0)) {
            sender.registerSources(source.regions());

            assertThat(sender.connect(DECODE_HOST, decode.descriptor).transport()).isEqualTo("tcp");
            assertThat(sender.wantsSharedFileMemory()).isFalse();
        }
    }

    @Test
    void forcedShmRefusesAReceiverOnAnotherHostAndAnonymousMemory()
            throws Exception
    {
        try (Decode decode = new Decode(true);
                MooncakeBackend sender = sender("shm", "prefill-host");
                MooncakeBackend anonymousDecode = backend("shm", DECODE_HOST);
                Pool source = Pool.anonymous().fill(0);
                Pool anonymous = Pool.anonymous()) {
            sender.registerSources(source.regions());

            assertThatThrownBy(() -> sender.connect(DECODE_HOST, decode.descriptor))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("shm cannot reach the receiver on host decode-host from host prefill-host");
            assertThatThrownBy(() -> anonymousDecode.expose(anonymous.regions(), null, WriteGuard.ALLOW_ALL))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("needs the KV pool in a shared file");
        }
    }

    @Test
    void connectChecksOrderAndGeometryBeforeOpeningAnything()
            throws Exception
    {
        try (Decode decode = new Decode(false);
                MooncakeBackend sender = sender("tcp", "prefill-host");
                Pool source = Pool.anonymous()) {
            assertThatThrownBy(() -> sender.connect(DECODE_HOST, decode.descriptor))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("registerSources must come before connect");

            sender.registerSources(source.regions().subList(0, 2));
            assertThatThrownBy(() -> sender.connect(DECODE_HOST, decode.descriptor))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("exposed 3 regions, this sender has 2");

            byte[] otherVersion = decode.descriptor.clone();
            otherVersion[0] = 9;
            sender.registerSources(source.regions());
            assertThatThrownBy(() -> sender.connect(DECODE_HOST, otherVersion))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not a mooncake descriptor of version 2");
        }
    }

    @Test
    void aSecondExposeIsRefusedSinceTheCoreExposesAPoolOnce()
            throws Exception
    {
        try (Decode decode = new Decode(false);
                Pool other = Pool.anonymous()) {
            assertThatThrownBy(() -> decode.backend.expose(other.regions(), null, WriteGuard.ALLOW_ALL))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("exposed its pool already");
        }
    }

    /** Drives {@code peer} as the engine does (the core's transfer link) and checks that a plan lands. */
    private static void assertLands(TransferPeer peer, Pool source, Pool destination)
            throws Exception
    {
        try (TransferLink link = Link.start("mooncake", peer, source.regions())) {
            TransferPlan plan = plan(new RoomKey(1, 0), 0, 0, ProducerFence.DONE, new int[] {3, 9, 5}, new int[] {40, 2, 2});
            Outcome outcome = new Outcome();
            link.post(plan, outcome);
            assertThat(outcome.await().completed()).isTrue();
            assertThat(destination.mismatches(pagesOf(plan))).isEmpty();
        }
    }

    private MooncakeBackend sender(String transport, String hostId)
    {
        return backend(transport, hostId);
    }

    private MooncakeBackend backend(String transport, String hostId)
    {
        return new MooncakeBackend(new RecordingContext(hostId, folder), MooncakeConfig.from(SETTINGS.with("transport", transport)));
    }

    /** A decode under auto on {@link #DECODE_HOST}, its pool in a file or in anonymous memory. */
    private final class Decode
            implements AutoCloseable
    {
        final Pool pool;
        final MooncakeBackend backend;
        final byte[] descriptor;

        Decode(boolean sharedFile)
        {
            pool = (sharedFile ? Pool.mapped(folder.resolve("pool")) : Pool.anonymous()).fillCanary();
            backend = backend("auto", DECODE_HOST);
            descriptor = backend.expose(pool.regions(), pool.file(), WriteGuard.ALLOW_ALL);
        }

        @Override
        public void close()
        {
            backend.close();
            pool.close();
        }
    }
}
