package io.handoff.plugin.mooncake;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;

/**
 * Transfer backend "mooncake". Over {@code tcp} the receiver copies frames into its own pool after
 * asking its write guard (RECEIVER_VALIDATED_WRITES); over {@code shm} the sender writes into the decode
 * pool's shared mapping directly (ONE_SIDED). Both wait on the producer fence on the transfer thread
 * (FORWARD_SYNC) and drain per room (DRAIN_ACK). {@code auto} picks per peer, so it promises only what
 * both transports share; each peer reports its own transport's set.
 */
public final class MooncakeProvider
        implements TransferBackendProvider
{
    // Where Linux keeps POSIX shared memory; shm needs a memory-backed file system for the pool file.
    private static final Path SHARED_MEMORY = Path.of("/dev/shm");

    @Override
    public String id()
    {
        return "mooncake";
    }

    @Override
    public String description()
    {
        return "batched page writes over TCP (receiver-validated) or same-host shared memory (one-sided)";
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        return Transport.parse(settings.getString("transport")).capabilities();
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        MooncakeConfig config;
        try {
            config = MooncakeConfig.from(settings);
        }
        catch (IllegalArgumentException e) {
            return Availability.unavailable(e.getMessage());
        }
        if (config.transport() == Transport.SHM && !Files.isDirectory(SHARED_MEMORY)) {
            return Availability.unavailable("transport shm keeps the decode KV pool in a shared-memory file, but " + SHARED_MEMORY
                    + " does not exist on this machine; set handoff.plugins.mooncake.transport = tcp");
        }
        // Every decode listens for tcp data connections (auto falls back to tcp per peer): check the address is ours.
        try (ServerSocketChannel probe = ServerSocketChannel.open()) {
            probe.bind(new InetSocketAddress(config.listenHost(), 0));
        }
        catch (IOException | RuntimeException e) {
            return Availability.unavailable("cannot listen on " + config.listenHost() + " (" + e.getMessage()
                    + "); set handoff.plugins.mooncake.listen-host to an address of this machine");
        }
        return Availability.AVAILABLE;
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        return new MooncakeBackend(context, MooncakeConfig.from(settings));
    }
}
