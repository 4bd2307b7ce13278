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
     * (addresses, keys, a listening port, and the pool itself as {@link TransferContext#describePool} describes it).
     * {@code guard} decides which writes may land. The core calls it once per backend and sends the same descriptor
     * to every prefill, so a backend needs no idempotence of its own.
     *
     * @param sharedFile the file the regions are mapped from, or null for anonymous memory
     */
    byte[] expose(List<MemoryRegion> regions, java.nio.file.Path sharedFile, WriteGuard guard);

    /** Sender side: the regions plans read from; called once, before any {@link #connect}. */
    void registerSources(List<MemoryRegion> regions);

    /**
     * Sender side: connects to a receiver from its descriptor (bytes from the network: validate them; map a same-host
     * pool only through {@link TransferContext#mapSharedPool}). The core drives the returned peer through its own
     * transfer link and closes it.
     */
    TransferPeer connect(String peerHostId, byte[] descriptor);

    /**
     * Sender side: connects to a receiver whose pages the plans fill through {@code slices} (the core checked it against
     * both sides' regions). A backend declaring {@link TransferCapability#HEAD_SLICES} moves any map; the default takes
     * only the identity, which {@link #connect(String, byte[])} moves.
     */
    default TransferPeer connect(String peerHostId, byte[] descriptor, SliceMap slices)
    {
        if (!slices.isIdentity()) {
            throw new UnsupportedOperationException("this backend moves whole pages between servers of the same layout only (it does not "
                    + "declare HEAD_SLICES)");
        }
        return connect(peerHostId, descriptor);
    }

    @Override
    void close();
}
