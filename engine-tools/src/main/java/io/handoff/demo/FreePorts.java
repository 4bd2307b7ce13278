package io.handoff.demo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * Free loopback ports for the demo's servers, chosen by the kernel. All sockets stay open until every
 * port is chosen, so the ports are distinct; between their release and the servers' bind another
 * program could take one, and the server that loses then fails at start with a message the demo prints.
 */
public final class FreePorts
{
    private FreePorts() {}

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
