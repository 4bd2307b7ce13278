package io.handoff.spi.transfer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What the core gives a backend when it opens one: identity, where shared files go, and the pool plumbing every
 * backend would otherwise write again: describing a receiver's pool to senders, and mapping a same-host receiver's
 * pool file. A backend embeds the description in its own descriptor; the core, not the backend, decides what a
 * description may name and maps it (one place to validate what came from the network).
 */
public interface TransferContext
{
    /** An identifier of this host; equal on two processes exactly when they share memory. */
    String hostId();

    /** A folder for shared-memory files (e.g. under /dev/shm). */
    Path sharedMemoryDirectory();

    /**
     * Receiver side, in {@link TransferBackend#expose}: this pool described for senders (this host, the shared file if
     * any, every region's place in it and page geometry), as bytes to embed in the backend's descriptor.
     *
     * @param sharedFile the file the regions are mapped from, or null for anonymous memory
     */
    byte[] describePool(List<MemoryRegion> regions, Path sharedFile);

    /**
     * Sender side: reads what {@link #describePool} wrote. Throws {@link IllegalArgumentException} naming what is wrong
     * when the bytes are not a pool description.
     */
    PoolDescription readPool(byte[] description);

    /**
     * Sender side: maps a same-host receiver's pool file read-write, region by region. Throws
     * {@link IllegalArgumentException} when the receiver is on another host or has no shared file, and
     * {@link java.io.UncheckedIOException} when the file cannot be mapped.
     */
    SharedPoolMapping mapSharedPool(byte[] description);

    /**
     * Before a backend listens on an address of its own: throws {@link IllegalStateException}, saying what to set, when
     * the cluster's security settings forbid it (without a cluster secret, only loopback addresses).
     */
    default void checkListen(InetAddress address)
    {
    }

    /**
     * Authenticates a backend's own connection as one between members of this cluster, before anything else is read
     * from or written to it: with a cluster secret, the core's mutual challenge-response (fixed-size messages, within
     * the handshake timeout); without one, nothing. Throws an {@link IOException} whose message says what failed; the
     * caller closes the connection (and, on the accepting side, reports it with {@link #refused}).
     *
     * @param connecting whether this side opened the connection (the sender); false on the accepting side
     */
    default void authenticate(Socket socket, boolean connecting)
            throws IOException
    {
    }

    /**
     * {@link #authenticate}, and what the handshake leaves for the connection's frames: with a cluster secret, a key of
     * this connection's own per direction ({@link FrameTags}), so a backend can tag every frame it sends and check every
     * frame it reads, and a man in the middle can neither alter nor inject one; without a secret, {@link FrameTags#NONE}.
     * Added for backends that stream data over their own connections (mooncake tcp); {@link #authenticate} stays for
     * those that only need the peer proven.
     */
    default FrameTags authenticateConnection(Socket socket, boolean connecting)
            throws IOException
    {
        authenticate(socket, connecting);
        return FrameTags.NONE;
    }

    /**
     * A peer this backend refused (it failed {@link #authenticate}, or broke the backend's protocol): the core counts
     * it and logs it at most once a minute per address and kind, so a flood of bad connections is not a flood of lines.
     */
    default void refused(String peerAddress, String reason)
    {
    }

    /**
     * {@link #refused(String, String)} with the class of refusal, a short label the core counts it under in
     * {@code handoff_connections_refused_total{listener="transfer",reason}}: "limit", "hello-timeout", "malformed", ...
     */
    default void refused(String peerAddress, String kind, String reason)
    {
        refused(peerAddress, reason);
    }

    /**
     * A connection this backend's listener accepted, counted against the cluster's caps on connections that have not
     * finished their hello ({@code handoff.security.max-unauthenticated-connections} in total and
     * {@code max-unauthenticated-per-address}, each backend listener its own): empty when it is beyond one of them, in
     * which case the core has counted and logged the refusal and the backend closes the connection at once. Otherwise the
     * backend closes the returned admission once the connection said its hello, or ended (closing it twice is harmless).
     */
    default Optional<Admission> admit(String peerAddress)
    {
        return Optional.of(Admission.NONE);
    }

    /** A place among the connections that have not finished their hello, held until closed. */
    @FunctionalInterface
    interface Admission
            extends AutoCloseable
    {
        /** A place that costs nothing: a context without caps. */
        Admission NONE = () -> {};

        @Override
        void close();
    }
}
