package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.WriteGuard;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.io.UncheckedIOException;
import java.lang.System.Logger;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;
import static java.util.Objects.requireNonNull;

/**
 * The decode side of the tcp transport: accepts senders' data connections and, on one thread per
 * connection, copies each data frame straight from the socket into the exposed region, after checking every
 * header field against the regions and asking the write guard. A frame that does not fit the regions closes
 * its connection before a byte of it is read, so a peer can never write outside a region; a refused frame is
 * read into a scratch buffer and dropped, and the connection goes on.
 *
 * <p>Each connection first authenticates as a member of the cluster ({@link TransferContext#authenticate}: the cluster
 * secret's handshake when there is one) before its hello is read. A connection refused for failing that, or for a
 * malformed frame, is reported to the core ({@link TransferContext#refused}), which counts it and logs each address
 * at most once a minute, so a flood of bad connections cannot flood the log.
 *
 * <p>With a cluster secret every frame is tagged under the connection's session ({@link FrameTags}). A header's tag is
 * checked before any of its fields is used; a payload's after its bytes streamed into the granted pages (checking
 * first would need a copy of every page): a payload whose tag fails closes the connection, so its plan is never
 * acknowledged and its room fails before it can commit, and the pages it reached were the room's own grant.
 */
final class TcpReceiver
        implements AutoCloseable
{
    private static final Logger log = System.getLogger(TcpReceiver.class.getName());
    private static final int SCRATCH_BYTES = 64 * 1024;

    private final List<MemoryRegion> regions;
    private final WriteGuard guard;
    private final long maxFrameBytes;
    private final int socketBufferBytes;
    private final Duration handshakeTimeout;
    private final ServerSocketChannel server;
    private final TransferContext context;
    private final Thread acceptor;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private volatile String lastRejection;

    private TcpReceiver(List<MemoryRegion> regions, WriteGuard guard, MooncakeConfig config, ServerSocketChannel server, TransferContext context)
    {
        this.context = requireNonNull(context, "context is null");
        this.regions = List.copyOf(regions);
        this.guard = requireNonNull(guard, "guard is null");
        this.maxFrameBytes = config.maxFrameBytes();
        this.socketBufferBytes = config.socketBufferBytes();
        this.handshakeTimeout = config.connectTimeout();
        this.server = server;
        this.acceptor = Thread.ofPlatform().daemon().name("mooncake-accept-" + port()).unstarted(this::acceptLoop);
    }

    static TcpReceiver start(List<MemoryRegion> regions, WriteGuard guard, MooncakeConfig config, TransferContext context)
    {
        ServerSocketChannel server = null;
        try {
            InetSocketAddress address = new InetSocketAddress(config.listenHost(), 0);
            if (address.isUnresolved()) {
                throw new IOException("the address does not resolve");
            }
            // without a cluster secret the core allows only loopback addresses (it says what to set otherwise)
            context.checkListen(address.getAddress());
            server = ServerSocketChannel.open();
            server.bind(address);
            TcpReceiver receiver = new TcpReceiver(regions, guard, config, server, context);
            receiver.acceptor.start();
            return receiver;
        }
        catch (IOException e) {
            closeQuietly(server);
            throw new UncheckedIOException("mooncake cannot listen on " + config.listenHost() + ": " + e.getMessage()
                    + "; set handoff.plugins.mooncake.listen-host to an address of this machine", e);
        }
    }

    int port()
    {
        try {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    long maxFrameBytes()
    {
        return maxFrameBytes;
    }

    /** Why the last connection was closed for a malformed frame or handshake; for tests and diagnostics. */
    String lastRejection()
    {
        return lastRejection;
    }

    @Override
    public void close()
    {
        closed = true;
        closeQuietly(server);
        for (Connection connection : connections) {
            closeQuietly(connection.channel);
        }
        // Once a connection's thread has returned it never touches the pool again; the core may then unmap it.
        join(acceptor);
        for (Connection connection : connections) {
            join(connection.thread);
        }
    }

    private void acceptLoop()
    {
        long accepted = 0;
        while (!closed) {
            try {
                SocketChannel channel = server.accept();
                String host = hostOf(channel);
                // counted against the cluster's caps until its hello; beyond them the core has counted the refusal
                Optional<TransferContext.Admission> admission = context.admit(host);
                if (admission.isEmpty()) {
                    closeQuietly(channel);
                    continue;
                }
                Connection connection = new Connection(channel, host, admission.get(), "mooncake-receive-" + port() + "-" + ++accepted);
                connections.add(connection);
                if (closed) {
                    closeQuietly(channel);
                }
                connection.thread.start();
            }
            catch (ClosedChannelException e) {
                return;
            }
            catch (IOException e) {
                if (!closed) {
                    log.log(WARNING, "mooncake receiver on port " + port() + " failed to accept a connection: " + e.getMessage());
                }
            }
        }
    }

    private static String hostOf(SocketChannel channel)
    {
        Socket socket = channel.socket();
        return socket.getInetAddress() == null ? "?" : socket.getInetAddress().getHostAddress();
    }

    /** A frame or handshake that breaks the protocol; its connection is closed. */
    private static final class Malformed
            extends Exception
    {
        /** The metric label of the refusal. */
        final String kind;

        Malformed(String message)
        {
            this("malformed", message);
        }

        Malformed(String kind, String message)
        {
            super(message, null, false, false);
            this.kind = kind;
        }
    }

    private final class Connection
    {
        private final SocketChannel channel;
        private final String host;
        // a place among the connections without a hello, held from arrival until the hello was answered (or the end)
        private final TransferContext.Admission admission;
        private final Thread thread;
        private final ByteBuffer header = ByteBuffer.allocateDirect(WireFormat.HEADER_BYTES);
        private final ByteBuffer reply = ByteBuffer.allocateDirect(WireFormat.REPLY_BYTES + WireFormat.MAX_REASON_BYTES);
        private ByteBuffer scratch;
        private String peer = "?";
        private FrameTags tags = FrameTags.NONE;
        private byte[] tag = new byte[0];

        // The plan being received: frames of one plan arrive together and end with END or ABORT.
        private RoomKey room;
        private int chunk;
        private long planBytes;
        private long writtenBytes;
        private String refusal;

        Connection(SocketChannel channel, String host, TransferContext.Admission admission, String name)
        {
            this.channel = channel;
            this.host = host;
            this.admission = admission;
            this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
        }

        private void run()
        {
            try {
                peer = String.valueOf(channel.getRemoteAddress());
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                if (socketBufferBytes > 0) {
                    channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBufferBytes);
                }
                try {
                    tags = context.authenticateConnection(channel.socket(), false);
                    tag = new byte[tags.tagBytes()];
                }
                catch (IOException e) {
                    throw new Malformed("auth", "cluster authentication failed: " + e.getMessage());
                }
                handshake();
                admission.close();
                while (readHeader()) {
                    frame();
                }
            }
            catch (Malformed e) {
                lastRejection = e.getMessage();
                context.refused(peerHost(), e.kind, "mooncake receiver closed the connection from " + peer + ": " + e.getMessage());
            }
            catch (IOException e) {
                if (!closed) {
                    log.log(DEBUG, "mooncake connection from " + peer + " ended: " + e);
                }
            }
            catch (RuntimeException e) {
                lastRejection = "receiver failed: " + e;
                log.log(WARNING, "mooncake receiver closed the connection from " + peer + " after an unexpected failure", e);
            }
            finally {
                admission.close();
                closeQuietly(channel);
                connections.remove(this);
            }
        }


        private String peerHost()
        {
            return host;
        }

        private void handshake()
                throws IOException, Malformed
        {
            ByteBuffer hello = ByteBuffer.allocate(WireFormat.HELLO_BYTES);
            // A stray client that never speaks, or trickles, must not hold a thread: the whole hello has one deadline.
            long deadline = System.nanoTime() + handshakeTimeout.toNanos();
            int read = 0;
            var in = channel.socket().getInputStream();
            while (read < WireFormat.HELLO_BYTES) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new Malformed("hello-timeout", "no whole hello within " + handshakeTimeout.toMillis() + " ms");
                }
                channel.socket().setSoTimeout(Math.toIntExact(Math.max(1, left / 1_000_000)));
                int n;
                try {
                    n = in.read(hello.array(), read, WireFormat.HELLO_BYTES - read);
                }
                catch (java.net.SocketTimeoutException e) {
                    throw new Malformed("hello-timeout", "no whole hello within " + handshakeTimeout.toMillis() + " ms");
                }
                if (n < 0) {
                    throw new Malformed("closed-before-hello", "connection closed during the handshake");
                }
                read += n;
            }
            if (!WireFormat.isHello(hello)) {
                throw new Malformed("not a mooncake hello of protocol version " + WireFormat.VERSION + " (magic "
                        + Integer.toHexString(hello.getInt(0)) + ", version " + hello.get(4) + ")");
            }
            channel.socket().setSoTimeout(0);
            writeFully(WireFormat.hello());
        }

        /** Reads the next header; false at a clean end of stream between frames. */
        private boolean readHeader()
                throws IOException
        {
            header.clear();
            while (header.hasRemaining()) {
                if (channel.read(header) < 0) {
                    if (header.position() == 0 && room == null) {
                        return false;
                    }
                    throw new EOFException("connection closed inside a plan");
                }
            }
            return true;
        }

        private void frame()
                throws IOException, Malformed
        {
            if (tags.tagBytes() > 0) {
                checkTag(tags.nextReceived(WireFormat.HEADER_BYTES).update(header.duplicate().flip()), "header");
            }
            byte kind = header.get(WireFormat.KIND);
            long roomId = header.getLong(WireFormat.ROOM);
            int generation = header.getInt(WireFormat.GENERATION);
            int frameChunk = header.getInt(WireFormat.CHUNK);
            long length = header.getLong(WireFormat.LENGTH);
            if (generation < 0) {
                throw new Malformed("frame for room " + roomId + " has generation " + generation);
            }
            if (room == null) {
                room = new RoomKey(roomId, generation);
                chunk = frameChunk;
            }
            else if (room.roomId() != roomId || room.generation() != generation || chunk != frameChunk) {
                throw new Malformed("frame for room " + roomId + "#" + generation + " chunk " + frameChunk
                        + " inside the plan of room " + room + " chunk " + chunk);
            }
            switch (kind) {
                case WireFormat.DATA -> data(length);
                case WireFormat.ROWS -> rows(length);
                case WireFormat.END -> {
                    if (length != planBytes) {
                        throw new Malformed("plan of room " + room + " chunk " + chunk + " ends claiming " + length
                                + " bytes after " + planBytes + " bytes of frames");
                    }
                    endPlan(refusal);
                }
                case WireFormat.ABORT -> endPlan(refusal != null ? refusal : "the sender aborted the plan");
                default -> throw new Malformed("unknown frame kind " + kind);
            }
        }

        /** The region a frame's header names, refusing one that is not exposed and pages outside it. */
        private MemoryRegion framedRegion(int index, int page, int count)
                throws Malformed
        {
            if (index < 0 || index >= regions.size()) {
                throw new Malformed("frame for room " + room + " names region " + index + "; " + regions.size() + " regions are exposed");
            }
            MemoryRegion region = regions.get(index);
            if (count < 1 || page < 0 || (long) page + count > region.pages()) {
                throw new Malformed("frame for room " + room + " writes pages " + page + ".." + ((long) page + count - 1)
                        + " of region " + index + ", which has pages 0.." + (region.pages() - 1));
            }
            return region;
        }

        private void data(long length)
                throws IOException, Malformed
        {
            int index = header.getInt(WireFormat.REGION);
            int page = header.getInt(WireFormat.PAGE);
            int count = header.getInt(WireFormat.COUNT);
            MemoryRegion region = framedRegion(index, page, count);
            if (length != count * region.pageStride()) {
                throw new Malformed("frame for room " + room + " carries " + length + " bytes for " + count + " pages of "
                        + region.pageStride() + " bytes");
            }
            if (length > Math.max(maxFrameBytes, region.pageStride())) {
                throw new Malformed("frame for room " + room + " carries " + length + " bytes; the receiver's max-frame-bytes is " + maxFrameBytes);
            }
            planBytes += length;
            FrameTags.Tag payloadTag = tags.nextReceived(length);
            WriteGuard.Permit permit = permit(page, count);
            if (refusal != null) {
                // Once a plan is refused, its later frames are dropped too.
                discard(length, payloadTag);
                checkTag(payloadTag, "payload");
                return;
            }
            // The permit stays open while bytes stream into the pool: the core reuses these pages only after it closes.
            try (WriteGuard.Permit open = permit) {
                ByteBuffer destination = region.segment().asSlice(page * region.pageStride(), length).asByteBuffer();
                while (destination.hasRemaining()) {
                    if (channel.read(destination) < 0) {
                        throw new EOFException("connection closed inside a data frame");
                    }
                }
                if (tags.tagBytes() > 0) {
                    checkTag(payloadTag.update(destination.flip()), "payload");
                }
            }
            writtenBytes += length;
        }

        /**
         * A ROWS frame: a head slice of every row of the pages, placed row by row at the offset its prefix names, after the
         * same checks as a DATA frame's (region, pages, granted, length) and that the slice lies inside each row.
         */
        private void rows(long length)
                throws IOException, Malformed
        {
            int index = header.getInt(WireFormat.REGION);
            int page = header.getInt(WireFormat.PAGE);
            int count = header.getInt(WireFormat.COUNT);
            MemoryRegion region = framedRegion(index, page, count);
            if (length < WireFormat.ROWS_PREFIX_BYTES || length > Math.max(maxFrameBytes, region.pageStride()) + WireFormat.ROWS_PREFIX_BYTES) {
                throw new Malformed("rows frame for room " + room + " carries " + length + " bytes; the receiver's max-frame-bytes is " + maxFrameBytes);
            }
            FrameTags.Tag payloadTag = tags.nextReceived(length);
            ByteBuffer prefix = ByteBuffer.allocate(WireFormat.ROWS_PREFIX_BYTES);
            while (prefix.hasRemaining()) {
                if (channel.read(prefix) < 0) {
                    throw new EOFException("connection closed inside a rows frame");
                }
            }
            payloadTag.update(prefix.duplicate().flip());
            prefix.flip();
            long rowOffset = prefix.getLong();
            int rowsPerPage = prefix.getInt();
            int rowBytes = prefix.getInt();
            long rowStride = rowsPerPage < 1 ? 0 : region.pageStride() / rowsPerPage;
            if (rowsPerPage < 1 || rowStride * rowsPerPage != region.pageStride() || rowBytes < 1 || rowOffset < 0 || rowOffset + rowBytes > rowStride) {
                throw new Malformed("rows frame for room " + room + " places " + rowBytes + " bytes at " + rowOffset + " of " + rowsPerPage
                        + " rows a page, which does not fit region " + index + "'s pages of " + region.pageStride() + " bytes");
            }
            long rows = (long) count * rowsPerPage;
            if (length != WireFormat.ROWS_PREFIX_BYTES + rows * rowBytes) {
                throw new Malformed("rows frame for room " + room + " carries " + length + " bytes for " + rows + " rows of " + rowBytes + " bytes");
            }
            planBytes += length - WireFormat.ROWS_PREFIX_BYTES;
            WriteGuard.Permit permit = permit(page, count);
            if (refusal != null) {
                discard(length - WireFormat.ROWS_PREFIX_BYTES, payloadTag);
                checkTag(payloadTag, "payload");
                return;
            }
            // rows arrive back to back: read many at a time into scratch, then place each (one read per row was a syscall per row)
            if (scratch == null) {
                scratch = ByteBuffer.allocateDirect(SCRATCH_BYTES);
            }
            MemorySegment staged = MemorySegment.ofBuffer(scratch.duplicate().clear());
            int rowsPerRead = (int) Math.max(1, Math.min(rows, SCRATCH_BYTES / rowBytes));
            try (WriteGuard.Permit open = permit) {
                for (long row = 0; row < rows; ) {
                    int batch = (int) Math.min(rowsPerRead, rows - row);
                    if ((long) batch * rowBytes > SCRATCH_BYTES) {
                        // one row longer than the scratch: straight into the pool
                        ByteBuffer destination = region.segment().asSlice(((long) page * rowsPerPage + row) * rowStride + rowOffset, rowBytes).asByteBuffer();
                        readFully(destination, payloadTag);
                        row++;
                        continue;
                    }
                    scratch.clear().limit(batch * rowBytes);
                    readFully(scratch, payloadTag);
                    for (int i = 0; i < batch; i++) {
                        MemorySegment.copy(staged, (long) i * rowBytes, region.segment(), ((long) page * rowsPerPage + row + i) * rowStride + rowOffset,
                                rowBytes);
                    }
                    row += batch;
                }
                if (tags.tagBytes() > 0) {
                    checkTag(payloadTag, "payload");
                }
            }
            writtenBytes += length - WireFormat.ROWS_PREFIX_BYTES;
        }

        /**
         * The guard's permit to write pages {@code page..+count-1} of the plan's room, or null once the plan is refused
         * (now, by the guard, or before): the refusal says why.
         */
        private WriteGuard.Permit permit(int page, int count)
        {
            if (refusal != null) {
                return null;
            }
            try {
                WriteGuard.Permit permit = guard.open(room, page, count);
                if (permit == null) {
                    refusal = "the receiver refused pages " + page + ".." + (page + count - 1) + " of room " + room + ": not granted";
                }
                return permit;
            }
            catch (RuntimeException e) {
                log.log(WARNING, "mooncake write guard failed for room " + room + "; refusing the write", e);
                refusal = "the receiver refused pages " + page + ".." + (page + count - 1) + " of room " + room + ": its write guard failed: " + e;
                return null;
            }
        }

        /** Reads {@code buffer} full from the connection, the tag (when there is one) over what was read. */
        private void readFully(ByteBuffer buffer, FrameTags.Tag tag)
                throws IOException
        {
            ByteBuffer read = buffer.duplicate();
            while (buffer.hasRemaining()) {
                if (channel.read(buffer) < 0) {
                    throw new EOFException("connection closed inside a rows frame");
                }
            }
            if (tags.tagBytes() > 0) {
                tag.update(read.limit(buffer.position()));
            }
        }

        /** Reads the frame part's tag off the wire and checks it; a mismatch closes the connection as a refused peer. */
        private void checkTag(FrameTags.Tag expected, String part)
                throws IOException, Malformed
        {
            ByteBuffer presented = ByteBuffer.wrap(tag);
            while (presented.hasRemaining()) {
                if (channel.read(presented) < 0) {
                    throw new EOFException("connection closed inside a frame's tag");
                }
            }
            if (!expected.matches(tag)) {
                throw new Malformed("a frame " + part + (room == null ? "" : " of room " + room) + " fails its tag: it was altered or "
                        + "injected on the way (a man in the middle?), or replayed; the connection is closed and its plan fails");
            }
        }

        private void discard(long length, FrameTags.Tag payloadTag)
                throws IOException
        {
            if (scratch == null) {
                scratch = ByteBuffer.allocateDirect(SCRATCH_BYTES);
            }
            long left = length;
            while (left > 0) {
                scratch.clear().limit((int) Math.min(left, SCRATCH_BYTES));
                int n = channel.read(scratch);
                if (n < 0) {
                    throw new EOFException("connection closed inside a refused data frame");
                }
                payloadTag.update(scratch.flip());
                left -= n;
            }
        }

        private void endPlan(String reason)
                throws IOException
        {
            ByteBuffer answer = WireFormat.reply(reply, room, chunk, writtenBytes, reason);
            ByteBuffer answerTag = ByteBuffer.wrap(tags.nextSent(answer.remaining()).update(answer).value());
            writeFully(answer);
            writeFully(answerTag);
            room = null;
            planBytes = 0;
            writtenBytes = 0;
            refusal = null;
        }

        private void writeFully(ByteBuffer buffer)
                throws IOException
        {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }
    }

    private static void join(Thread thread)
    {
        try {
            thread.join(Duration.ofSeconds(10));
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(AutoCloseable closeable)
    {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        }
        catch (Exception e) {
            log.log(DEBUG, "closing " + closeable + ": " + e);
        }
    }
}
