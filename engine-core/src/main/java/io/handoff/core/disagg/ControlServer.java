package io.handoff.core.disagg;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static java.util.Objects.requireNonNull;

/**
 * Accepts control connections on a port (0 picks a free one) and opens a {@link ControlChannel} for each,
 * handing it to the listener ({@link ControlChannel.Listener#opened} first). Keeps the open channels so
 * the owner can {@link #tick} them all and close them on shutdown.
 */
public final class ControlServer
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ControlServer.class);

    private final ServerSocket serverSocket;
    private final ControlChannel.Liveness liveness;
    private final DeadlineClock clock;
    private final ControlChannel.Listener listener;
    private final Set<ControlChannel> channels = ConcurrentHashMap.newKeySet();

    private ControlServer(ServerSocket serverSocket, ControlChannel.Liveness liveness, DeadlineClock clock, ControlChannel.Listener listener)
    {
        this.serverSocket = serverSocket;
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.listener = requireNonNull(listener, "listener is null");
    }

    public static ControlServer start(InetSocketAddress bind, ControlChannel.Liveness liveness, DeadlineClock clock, ControlChannel.Listener listener)
            throws IOException
    {
        requireNonNull(bind, "bind is null");
        ServerSocket serverSocket = new ServerSocket();
        try {
            serverSocket.bind(bind);
        }
        catch (IOException e) {
            serverSocket.close();
            throw new IOException("cannot listen for control connections on " + bind + ": " + e.getMessage(), e);
        }
        ControlServer server = new ControlServer(serverSocket, liveness, clock, listener);
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
            try {
                ControlChannel.open(socket, liveness, clock, tracking);
            }
            catch (IOException | RuntimeException e) {
                log.warn("cannot open a control channel from {}", socket.getRemoteSocketAddress(), e);
                closeQuietly(socket);
            }
        }
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
