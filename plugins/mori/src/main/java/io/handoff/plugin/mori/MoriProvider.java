package io.handoff.plugin.mori;

import io.handoff.spi.Availability;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferContext;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.function.Supplier;

import static io.handoff.spi.transfer.TransferCapability.REMOTE;
import static java.util.Objects.requireNonNull;

/**
 * Transfer backend "mori": writes pages straight from the source KV pool into the peer's memory, with
 * no staging copy. That is only safe for early send if the connection waits on the producing forward's
 * fence itself, so FORWARD_SYNC is declared exactly when {@code forward-sync} is on; with it off the core
 * waits on the fence before it hands a plan over (what the unfixed field backend of seed 000 did not) and
 * keeps early send off. REMOTE is
 * declared only when the RDMA path is usable, which in this version it never is (see {@link RdmaTransport}).
 */
public final class MoriProvider
        implements TransferBackendProvider
{
    // Where Linux keeps POSIX shared memory; the decode pool file must be on a memory-backed file system.
    private static final Path SHARED_MEMORY = Path.of("/dev/shm");

    private final Path sharedMemory;
    private final Supplier<RdmaTransport.Probe> rdma;

    public MoriProvider()
    {
        this(SHARED_MEMORY, RdmaTransport::probe);
    }

    MoriProvider(Path sharedMemory, Supplier<RdmaTransport.Probe> rdma)
    {
        this.sharedMemory = requireNonNull(sharedMemory, "sharedMemory is null");
        this.rdma = requireNonNull(rdma, "rdma is null");
    }

    @Override
    public String id()
    {
        return "mori";
    }

    @Override
    public String description()
    {
        return "direct one-sided page writes from the KV pool: shared memory on one host; RDMA (ibverbs) " + rdma.get().summary();
    }

    @Override
    public Set<TransferCapability> capabilities(PluginSettings settings)
    {
        Set<TransferCapability> capabilities = MoriConfig.sharedMemoryCapabilities(settings.getBoolean("forward-sync"));
        if (rdma.get().usable()) {
            capabilities.add(REMOTE);
        }
        return capabilities;
    }

    @Override
    public Availability availability(PluginSettings settings)
    {
        try {
            MoriConfig.from(settings);
        }
        catch (IllegalArgumentException e) {
            return Availability.unavailable(e.getMessage());
        }
        // Shared memory is pure Java and the only path this version has: it decides availability, RDMA does not.
        if (!Files.isDirectory(sharedMemory)) {
            return Availability.unavailable("mori keeps the decode KV pool in a shared-memory file, but " + sharedMemory
                    + " does not exist on this machine, and the RDMA path is " + rdma.get().summary() + "; use another transfer backend");
        }
        return Availability.AVAILABLE;
    }

    @Override
    public TransferBackend open(TransferContext context, PluginSettings settings)
    {
        return new MoriBackend(context, MoriConfig.from(settings), rdma.get());
    }
}
