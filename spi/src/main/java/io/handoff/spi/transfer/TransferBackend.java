package io.handoff.spi.transfer;

import java.util.List;

/**
 * A backend bound to one process's KV pool. A decode exposes its regions and sends the descriptor to
 * each prefill during the handshake; a prefill registers its regions as sources and connects to each
 * decode with the descriptor it received.
 */
public interface TransferBackend
        extends AutoCloseable
{
    /**
     * Whether receivers must allocate their KV pool as a shared file mapping ({@code KvPool} on a file in
     * {@link TransferContext#sharedMemoryDirectory()}) so that same-host senders can map it.
     */
    default boolean wantsSharedFileMemory()
    {
        return false;
    }

    /**
     * Receiver side: makes the regions writable by peers and returns the descriptor a sender needs
     * (addresses, keys, a file path, a listening port). {@code guard} decides which writes may land.
     *
     * @param sharedFile the file the regions are mapped from, or null for anonymous memory
     */
    byte[] expose(List<MemoryRegion> regions, java.nio.file.Path sharedFile, WriteGuard guard);

    /** Sender side: the regions plans read from. */
    void registerSources(List<MemoryRegion> regions);

    /** Sender side: connects to a receiver from its descriptor. */
    TransferPeer connect(String peerHostId, byte[] descriptor);

    @Override
    void close();
}
