package io.handoff.plugin.mooncake;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.util.EnumSet;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.RECEIVER_VALIDATED_WRITES;
import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;

/**
 * Transfer backend "mooncake". Over {@code tcp} the receiver copies frames into its own pool after
 * checking room, generation and grant (RECEIVER_VALIDATED_WRITES); over {@code shm} the sender writes
 * into the decode pool's shared mapping directly (ONE_SIDED). {@code auto} picks per peer, so it only
 * promises what both transports share.
 */
public final class MooncakeProvider
        implements TransferBackendProvider
{
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
        return switch (settings.getString("transport")) {
            case "tcp" -> EnumSet.of(RECEIVER_VALIDATED_WRITES, REMOTE, SAME_HOST);
            case "shm" -> EnumSet.of(ONE_SIDED, SAME_HOST);
            default -> EnumSet.of(SAME_HOST, REMOTE);
        };
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        return Availability.unavailable("the mooncake data path is not implemented in this version of Handoff");
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        throw new UnsupportedOperationException(availability(settings).reason());
    }
}
