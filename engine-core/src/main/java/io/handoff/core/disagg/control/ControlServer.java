package io.handoff.core.disagg.control;

import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ConnectionCaps;
import io.handoff.core.security.Session;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.Objects.requireNonNull;

/**
 * Accepts control connections on a port (0 picks a free one) and opens a {@link ControlChannel} for each,
 * handing it to the listener ({@link ControlChannel.Listener#opened} first). Keeps the open channels so
 * the owner can {@link #tick} them all and close them on shutdown.
 *
 * <p>With a cluster secret a connection becomes a channel only after it passed the {@link ClusterHandshake}, on a
 * thread of its own with the handshake timeout, so the accept loop never waits for a peer. A peer that fails is
 * told only a generic refusal.
 *
 * <p>A connection is <em>unadmitted</em> from its arrival until the owner accepted its hello
 * ({@link ControlChannel#admit}). Unadmitted connections are capped in total ({@code max-unauthenticated-connections})
 * and per remote address ({@code max-unauthenticated-per-address}): more are closed on arrival. Each must be admitted
 * within the handshake timeout of its arrival, or {@link #tick} drops it, whatever the others do: every step of its
 * handshake, hello, frame header and frame body falls under that one deadline, which no later byte moves. An unadmitted
 * connection is sent nothing unasked (no heartbeat) and is dropped without a word, so its close is plain even to a peer
 * that reads nothing. Every drop and refusal is counted by reason and logged, rate-limited
 * ({@link io.handoff.trace.ConnectionRefusals}).
 */
public final class ControlServer
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ControlServer.class);
    /** The metric label of this listener. */
    public static final String LISTENER = "control";
    // a refused peer's unread bytes are drained for at most this long, so our refusal is not lost to a reset
    private static final int DRAIN_MILLIS = 250;
    private static final int DRAIN_BYTES = 64 * 1024;

    private final ServerSocket serverSocket;
    private final ControlChannel.Liveness liveness;
    private final DeadlineClock clock;
    private final ControlSecurity security;
    private final ControlChannel.Listener listener;
    private final Set<ControlChannel> channels = ConcurrentHashMap.newKeySet();
    private final AtomicInteger handshaking = new AtomicInteger();
    // connections not admitted yet (handshaking, or open without an accepted hello): in all and by remote address
    private final ConnectionCaps caps;
    // the unadmitted channels, each released from the counts exactly once (admitted, dropped or closed)
    private final Map<ControlChannel, String> pending = new ConcurrentHashMap<>();

    private ControlServer(ServerSocket serverSocket, ControlChannel.Liveness liveness, DeadlineClock clock, ControlSecurity security,
            ControlChannel.Listener listener)
    {
        this.serverSocket = serverSocket;
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.security = requireNonNull(security, "security is null");
        this.listener = requireNonNull(listener, "listener is null");
        this.caps = ConnectionCaps.of(security.settings());
    }

    /** Without a cluster secret: loopback addresses only. */
    public static ControlServer start(InetSocketAddress bind, ControlChannel.Liveness liveness, DeadlineClock clock, ControlChannel.Listener listener)
            throws IOException
    {
        return start(bind, liveness, clock, ControlSecurity.loopbackOnly(), listener);
    }

    /**
     * Listens on {@code bind}; refuses (before binding) an address the security settings do not allow without a
     * secret.
     */
    public static ControlServer start(InetSocketAddress bind, ControlChannel.Liveness liveness, DeadlineClock clock, ControlSecurity security,
            ControlChannel.Listener listener)
            throws IOException
    {
        requireNonNull(bind, "bind is null");
        requireNonNull(security, "security is null");
        if (bind.isUnresolved()) {
            throw new IOException("cannot listen for control connections on " + bind + ": the host does not resolve");
        }
        security.settings().checkListen("the control endpoint", bind.getAddress());
        ServerSocket serverSocket = new ServerSocket();
        try {
            serverSocket.bind(bind);
        }
        catch (IOException e) {
            serverSocket.close();
            throw new IOException("cannot listen for control connections on " + bind + ": " + e.getMessage(), e);
        }
        ControlServer server = new ControlServer(serverSocket, liveness, clock, security, listener);
        Thread.ofVirtual().name("handoff-control-accept-" + serverSocket.getLocalPort()).start(server::acceptLoop);
        return server;
    }

    public int port()
    {
        return serverSocket.getLocalPort();
    }

    /** The open channels, a snapshot. */
    public List<ControlChannel> channels()
    {
        return List.copyOf(channels);
    }

    /** Connections accepted whose handshake has not ended yet. */
    public int handshaking()
    {
        return handshaking.get();
    }

    /** Connections not admitted yet: handshaking, or open without an accepted hello. */
    public int unadmitted()
    {
        return caps.held();
    }

    /**
     * Drops every unadmitted connection past its deadline (the handshake timeout from its arrival), then
     * {@link ControlChannel#tick} on every open channel, and logs the refusal summaries that are due.
     */
    public void tick()
    {
        long now = clock.nanos();
        long deadline = security.settings().handshakeTimeout().toNanos();
        for (ControlChannel channel : pending.keySet()) {
            if (!channel.admitted() && now - channel.openedNanos() >= deadline) {
                String host = channel.peerHost();
                // released before the close, so the listener's closed() does not count it as a peer that left
                if (release(channel) && channel.countRefusal()) {
                    security.failures().refused(LISTENER, host, "hello-timeout", "dropped: not admitted within the handshake timeout of "
                            + deadline / 1_000_000 + " ms (handoff.security.handshake-timeout)");
                }
                channel.close("dropped: no accepted hello within " + deadline / 1_000_000 + " ms");
            }
        }
        for (ControlChannel channel : channels) {
            channel.tick();
        }
        security.failures().refusals().flush();
    }

    /** Stops accepting and closes every channel. */
    @Override
    public void close()
    {
        try {
            serverSocket.close();
        }
        catch (IOException e) {
            log.debug("closing control server on port {}", port(), e);
        }
        for (ControlChannel channel : channels) {
            channel.close("control server shut down");
        }
    }

    private void acceptLoop()
    {
        ControlChannel.Listener tracking = new ControlChannel.Listener()
        {
            @Override
            public void opened(ControlChannel channel)
            {
                // reserved under its host at arrival (hostOf gives what peerHost does); before its reader starts
                pending.put(channel, channel.peerHost());
                channels.add(channel);
                listener.opened(channel);
            }

            @Override
            public void received(ControlChannel channel, ControlMessage message)
            {
                listener.received(channel, message);
            }

            @Override
            public void closed(ControlChannel channel, String reason)
            {
                channels.remove(channel);
                if (release(channel) && channel.countRefusal()) {
                    // closed before its hello was accepted, by the peer or for what it sent, and nobody counted it yet
                    security.failures().refusals().refused(LISTENER, channel.peerHost(), "closed-before-hello", reason);
                }
                listener.closed(channel, reason);
            }
        };
        while (!serverSocket.isClosed()) {
            Socket socket;
            try {
                socket = serverSocket.accept();
            }
            catch (IOException e) {
                if (!serverSocket.isClosed()) {
                    log.error("control server on port {} stopped accepting", port(), e);
                }
                return;
            }
            String host = hostOf(socket);
            Optional<String> overCap = caps.reserve(host);
            if (overCap.isPresent()) {
                security.failures().refusals().refused(LISTENER, host, "limit", overCap.get());
                closeQuietly(socket);
                continue;
            }
            if (!security.settings().authenticates()) {
                open(socket, null, host, tracking);
                continue;
            }
            handshaking.incrementAndGet();
            Thread.ofVirtual().name("handoff-control-handshake-" + port()).start(() -> authenticate(socket, host, tracking));
        }
    }

    // takes an unadmitted channel off the counts; true the one time it was still on them
    private boolean release(ControlChannel channel)
    {
        String host = pending.remove(channel);
        if (host == null) {
            return false;
        }
        caps.release(host);
        return true;
    }

    private void authenticate(Socket socket, String host, ControlChannel.Listener tracking)
    {
        Session session;
        try {
            session = ClusterHandshake.respond(socket, security.settings().secret().orElseThrow(), ControlSecurity.PURPOSE,
                    ControlSecurity.RESPONDER, ControlSecurity.INITIATOR, security.settings().handshakeTimeout());
        }
        catch (AuthenticationException e) {
            caps.release(host);
            security.failures().refused(LISTENER, host, e);
            // only a peer that opened with a hello hears why; anything else is just closed, so that its close is plain to
            // see even for a peer that never reads what it was sent
            if (e.failure() == AuthenticationException.Failure.NOT_A_HANDSHAKE && opensWithHello(e.opening())) {
                refuseInControlFrames(socket);
            }
            closeQuietly(socket);
            return;
        }
        catch (IOException | RuntimeException e) {
            caps.release(host);
            security.failures().refusals().refused(LISTENER, host, "handshake-failed", "the connection failed during its cluster handshake: "
                    + e.getMessage());
            closeQuietly(socket);
            return;
        }
        finally {
            handshaking.decrementAndGet();
        }
        open(socket, session, host, tracking);
    }

    // the connection stays reserved for host until the channel is admitted, dropped or closed (release)
    private void open(Socket socket, Session session, String host, ControlChannel.Listener tracking)
    {
        try {
            ControlChannel.open(socket, liveness, clock, tracking, session, security, false, this::release);
        }
        catch (IOException | RuntimeException e) {
            caps.release(host);
            log.warn("cannot open a control channel from {}", host, e);
            closeQuietly(socket);
        }
    }

    /**
     * A peer that speaks the control protocol without authenticating (a decode without the secret) hears why in a
     * frame it can read: a refused hello with the generic reason, nothing about this node.
     */
    private static void refuseInControlFrames(Socket socket)
    {
        try {
            byte[] frame = ControlCodec.encode(ControlMessage.HelloResult.refused(ControlSecurity.GENERIC_REFUSAL));
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            out.writeInt(frame.length);
            out.write(frame);
            out.flush();
            socket.shutdownOutput();
            socket.setSoTimeout(DRAIN_MILLIS);
            InputStream in = socket.getInputStream();
            byte[] sink = new byte[4096];
            long deadline = System.nanoTime() + DRAIN_MILLIS * 1_000_000L;
            int drained = 0;
            while (drained < DRAIN_BYTES && System.nanoTime() < deadline) {
                int n = in.read(sink);
                if (n < 0) {
                    return;
                }
                drained += n;
            }
        }
        catch (IOException e) {
            // the peer is gone or silent: the refusal was best effort
        }
    }

    // a frame length a hello can have: what a decode without the secret sends first
    private static boolean opensWithHello(int length)
    {
        return length >= 1 && length <= ControlCodec.maxFrameBytes(ControlCodec.HELLO);
    }

    private static String hostOf(Socket socket)
    {
        InetAddress address = socket.getInetAddress();
        return address == null ? String.valueOf(socket.getRemoteSocketAddress()) : address.getHostAddress();
    }

    private static void closeQuietly(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException ignored) {
            // nothing more to do for a connection we could not use
        }
    }
}
