package io.handoff.core.disagg.control;

import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.ClusterHandshake;
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
 * told only a generic refusal, counted and logged (rate-limited per address); at most
 * {@code max-unauthenticated-connections} handshakes run at once, and further connections are closed on arrival.
 */
public final class ControlServer
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ControlServer.class);
    private static final String WHAT = "the control endpoint";
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

    private ControlServer(ServerSocket serverSocket, ControlChannel.Liveness liveness, DeadlineClock clock, ControlSecurity security,
            ControlChannel.Listener listener)
    {
        this.serverSocket = serverSocket;
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.security = requireNonNull(security, "security is null");
        this.listener = requireNonNull(listener, "listener is null");
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
        security.settings().checkListen(WHAT, bind.getAddress());
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

    /** {@link ControlChannel#tick} on every open channel. */
    public void tick()
    {
        for (ControlChannel channel : channels) {
            channel.tick();
        }
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
            if (!security.settings().authenticates()) {
                open(socket, null, tracking);
                continue;
            }
            if (handshaking.incrementAndGet() > security.settings().maxUnauthenticatedConnections()) {
                handshaking.decrementAndGet();
                security.failures().refused(WHAT, hostOf(socket), "limit", "more than " + security.settings().maxUnauthenticatedConnections()
                        + " connections are authenticating at once (handoff.security.max-unauthenticated-connections)");
                closeQuietly(socket);
                continue;
            }
            Thread.ofVirtual().name("handoff-control-handshake-" + port()).start(() -> authenticate(socket, tracking));
        }
    }

    private void authenticate(Socket socket, ControlChannel.Listener tracking)
    {
        Session session;
        try {
            session = ClusterHandshake.respond(socket, security.settings().secret().orElseThrow(), ControlSecurity.PURPOSE,
                    ControlSecurity.RESPONDER, ControlSecurity.INITIATOR, security.settings().handshakeTimeout());
        }
        catch (AuthenticationException e) {
            security.failures().refused(WHAT, hostOf(socket), e);
            // only a peer that opened with a hello hears why; anything else is just closed, so that its close is plain to
            // see even for a peer that never reads what it was sent
            if (e.failure() == AuthenticationException.Failure.NOT_A_HANDSHAKE && opensWithHello(e.opening())) {
                refuseInControlFrames(socket);
            }
            closeQuietly(socket);
            return;
        }
        catch (IOException | RuntimeException e) {
            log.debug("control connection from {} failed during its handshake", hostOf(socket), e);
            closeQuietly(socket);
            return;
        }
        finally {
            handshaking.decrementAndGet();
        }
        open(socket, session, tracking);
    }

    private void open(Socket socket, Session session, ControlChannel.Listener tracking)
    {
        try {
            ControlChannel.open(socket, liveness, clock, tracking, session, security);
        }
        catch (IOException | RuntimeException e) {
            log.warn("cannot open a control channel from {}", hostOf(socket), e);
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
