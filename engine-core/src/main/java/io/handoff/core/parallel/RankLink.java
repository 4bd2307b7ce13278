package io.handoff.core.parallel;

import io.handoff.core.security.FrameMac;
import io.handoff.core.security.Session;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One connection between the leader and a rank: frames of {@code [int type][int length][payload][tag]}, the tag an HMAC
 * of the frame under the session's key when the group has a cluster secret (none on a loopback-only group). Every
 * length is checked against a bound before anything is allocated, and a receiver that expects a size checks it
 * exactly; an unknown type, a bad tag or a short read closes the link.
 */
final class RankLink
        implements AutoCloseable
{
    static final int HELLO = 1;
    static final int WELCOME = 2;
    static final int READY = 3;
    static final int REFUSED = 4;
    static final int PLAN = 5;
    static final int PIECES = 6;
    static final int GATHERED = 7;
    static final int HEARTBEAT = 8;
    static final int SHUTDOWN = 9;
    static final int SHARED = 10;
    private static final int LAST_TYPE = SHARED;
    private static final int HEADER = 8;

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final Optional<Session> session;
    private final long maxFrameBytes;
    private final Object sendLock = new Object();
    private byte[] sendBuffer = new byte[256];

    RankLink(Socket socket, Optional<Session> session, long maxFrameBytes)
            throws IOException
    {
        this.socket = requireNonNull(socket, "socket is null");
        this.session = requireNonNull(session, "session is null");
        this.maxFrameBytes = maxFrameBytes;
        socket.setTcpNoDelay(true);
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1 << 16));
        this.out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
    }

    /** A received frame: its type and payload (little-endian). */
    record Frame(int type, ByteBuffer payload) {}

    void send(int type, byte[] payload)
            throws IOException
    {
        send(type, payload.length, buffer -> buffer.put(payload));
    }

    /** Sends a frame whose {@code length}-byte payload {@code writer} puts into the buffer it is given. */
    void send(int type, int length, PayloadWriter writer)
            throws IOException
    {
        synchronized (sendLock) {
            int tagBytes = session.isPresent() ? FrameMac.TAG_BYTES : 0;
            int total = HEADER + length;
            if (sendBuffer.length < total + tagBytes) {
                sendBuffer = new byte[Math.max(total + tagBytes, sendBuffer.length * 2)];
            }
            ByteBuffer buffer = ByteBuffer.wrap(sendBuffer, 0, total).order(ByteOrder.LITTLE_ENDIAN);
            buffer.putInt(type).putInt(length);
            writer.write(buffer);
            if (buffer.position() != total) {
                throw new IllegalStateException("a frame of type " + type + " declared " + length + " bytes and wrote " + (buffer.position() - HEADER));
            }
            out.write(sendBuffer, 0, total);
            if (session.isPresent()) {
                out.write(session.get().sending().tag(sendBuffer, total));
            }
            out.flush();
        }
    }

    /** The next frame; only one thread receives on a link. */
    Frame receive()
            throws IOException
    {
        byte[] header = new byte[HEADER];
        in.readFully(header);
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        int type = h.getInt();
        int length = h.getInt();
        if (type < HELLO || type > LAST_TYPE) {
            throw new IOException("unknown frame type " + type);
        }
        if (length < 0 || length > maxFrameBytes) {
            throw new IOException("a frame of " + Integer.toUnsignedString(length) + " bytes is over this group's bound of " + maxFrameBytes);
        }
        byte[] frame = new byte[HEADER + length];
        System.arraycopy(header, 0, frame, 0, HEADER);
        in.readFully(frame, HEADER, length);
        if (session.isPresent()) {
            byte[] tag = new byte[FrameMac.TAG_BYTES];
            in.readFully(tag);
            if (!session.get().receiving().verify(frame, frame.length, tag)) {
                throw new IOException("a frame's authentication tag is wrong: the link is not the authenticated peer's, or was altered");
            }
        }
        return new Frame(type, ByteBuffer.wrap(frame, HEADER, length).slice().order(ByteOrder.LITTLE_ENDIAN));
    }

    /** The next frame, which must be of {@code type}; a refusal's reason is thrown as it is. */
    Frame expect(int type)
            throws IOException
    {
        Frame frame = receive();
        if (frame.type() == REFUSED) {
            throw new IOException("refused: " + string(frame.payload()));
        }
        if (frame.type() != type) {
            throw new IOException("expected a frame of type " + type + ", got " + frame.type());
        }
        return frame;
    }

    void setReadTimeout(int millis)
            throws IOException
    {
        socket.setSoTimeout(millis);
    }

    String remote()
    {
        return String.valueOf(socket.getRemoteSocketAddress());
    }

    static byte[] utf8(String text)
    {
        byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + bytes.length).order(ByteOrder.LITTLE_ENDIAN);
        return b.putInt(bytes.length).put(bytes).array();
    }

    /** A length-prefixed UTF-8 string from {@code buffer}, at most 64 KiB. */
    static String string(ByteBuffer buffer)
            throws IOException
    {
        if (buffer.remaining() < 4) {
            throw new EOFException("a string's length is missing");
        }
        int length = buffer.getInt();
        if (length < 0 || length > 65536 || length > buffer.remaining()) {
            throw new IOException("a string of " + length + " bytes does not fit the frame");
        }
        byte[] bytes = new byte[length];
        buffer.get(bytes);
        return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Override
    public void close()
    {
        try {
            socket.close();
        }
        catch (IOException ignored) {
            // closing: nothing more to say to the peer
        }
    }

    @FunctionalInterface
    interface PayloadWriter
    {
        void write(ByteBuffer buffer);
    }
}
