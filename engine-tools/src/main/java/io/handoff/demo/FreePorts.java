package io.handoff.demo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Free loopback ports for the demo's servers, chosen by the kernel. All sockets stay open until every
 * port is chosen, so the ports are distinct; between their release and the servers' bind another
 * program could take one: {@link #retrying} then starts the servers again on other ports.
 */
public final class FreePorts
{
    /** Starts in all: on a machine where every chosen port is taken before its server binds it, the start gives up. */
    static final int ATTEMPTS = 3;

    /** One start of the servers on the ports given; everything it started is stopped when it fails. */
    @FunctionalInterface
    public interface Start<T>
    {
        T on(List<Integer> ports)
                throws StartupFailure, InterruptedException;
    }

    private FreePorts() {}

    /**
     * Runs {@code start} on {@code count} free ports; when a server ended because another program took one of those ports
     * after it was chosen (this machine is shared), runs it again on new ones, {@value #ATTEMPTS} times in all. A port
     * not chosen here (one the user gave) that is taken fails at once: new ports would not change it.
     */
    public static <T> T retrying(int count, Consumer<String> progress, Start<T> start)
            throws StartupFailure, InterruptedException
    {
        for (int attempt = 1; ; attempt++) {
            List<Integer> ports = allocate(count);
            try {
                return start.on(ports);
            }
            catch (StartupFailure e) {
                if (attempt == ATTEMPTS || e.takenPort().isEmpty() || !ports.contains(e.takenPort().getAsInt())) {
                    throw e;
                }
                progress.accept("port " + e.takenPort().getAsInt() + " was taken by another program after it was chosen; starting the "
                        + "servers again on other ports");
            }
        }
    }

    public static List<Integer> allocate(int count)
    {
        if (count < 1) {
            throw new IllegalArgumentException("count must be at least 1, got " + count);
        }
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                sockets.add(socket);
                ports.add(socket.getLocalPort());
            }
            return List.copyOf(ports);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot find " + count + " free loopback ports: " + e.getMessage(), e);
        }
        finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                }
                catch (IOException ignored) {
                    // a socket that would not close keeps its port from us, nothing more
                }
            }
        }
    }
}
