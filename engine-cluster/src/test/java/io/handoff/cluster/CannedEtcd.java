package io.handoff.cluster;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A loopback HTTP server that answers every request with one canned status and body, as a broken or hostile etcd
 * would: for the client's handling of answers a real etcd never gives.
 */
final class CannedEtcd
        implements AutoCloseable
{
    private final ServerSocket socket;
    private final Thread thread;
    private volatile int status;
    private volatile byte[] body;

    CannedEtcd(int status, byte[] body)
            throws IOException
    {
        this.status = status;
        this.body = body;
        this.socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        this.thread = Thread.ofPlatform().daemon().name("canned-etcd").start(this::serve);
    }

    URI endpoint()
    {
        return URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }

    private void serve()
    {
        while (!socket.isClosed()) {
            try (Socket connection = socket.accept()) {
                readRequest(connection.getInputStream());
                OutputStream out = connection.getOutputStream();
                byte[] answer = body;
                out.write(("HTTP/1.1 " + status + " X\r\nContent-Type: application/json\r\nContent-Length: " + answer.length + "\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(answer);
                out.flush();
            }
            catch (IOException e) {
                // the client gave up (an oversized answer), or the server is closing
            }
        }
    }

    private static void readRequest(InputStream in)
            throws IOException
    {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                return;
            }
            head.write(b);
        }
        int length = 0;
        for (String line : head.toString(StandardCharsets.US_ASCII).split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring("content-length:".length()).strip());
            }
        }
        in.readNBytes(length);
    }

    @Override
    public void close()
            throws Exception
    {
        socket.close();
        thread.join();
    }
}
