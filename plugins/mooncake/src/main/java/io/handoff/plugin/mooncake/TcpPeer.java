package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.System.Logger;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

/**
 * The tcp transport's sending side. Each page batch goes out as one frame: a header and the pages' bytes,
 * written by a gathering write straight from the source pool (no copy, no per-page object); after a plan's
 * frames the receiver's reply says whether it wrote them (ACK) or refused them (NACK). Plans are not
 * pipelined: one outstanding reply keeps "reported" equal to "nothing of it can still land", which is what
 * a drain promises.
 *
 * <p>With a cluster secret every frame carries the tags of the connection's session ({@link FrameTags}): a header's
 * and a payload's, and the sender checks the tag of each reply before it believes it.
 */
final class TcpPeer
        extends MooncakePeer
{
    private static final Logger log = System.getLogger(TcpPeer.class.getName());
    private static final int READ_SLICE_MILLIS = 50;

    private final SocketChannel channel;
    private final InputStream in;
    private final Duration ackTimeout;
    private final ByteBuffer header = ByteBuffer.allocateDirect(WireFormat.HEADER_BYTES);
    private final ByteBuffer[] frame = new ByteBuffer[2];
    private final ByteBuffer[] taggedFrame = new ByteBuffer[4];
    private final byte[] reply = new byte[WireFormat.REPLY_BYTES];
    private final FrameTags tags;
    private final TransferContext context;
    // Why the connection can no longer carry plans (it broke, or a reply did not come); null while it can.
    private volatile String broken;

    private TcpPeer(String name, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config, SocketChannel channel, FrameTags tags,
            TransferContext context)
            throws IOException
    {
        super(name, sources, remote, config);
        this.channel = channel;
        this.tags = tags;
        this.context = context;
        this.in = channel.socket().getInputStream();
        this.ackTimeout = config.ackTimeout();
    }

    /** Connects, authenticates as a member of the cluster ({@link TransferContext#authenticate}), then says the mooncake hello. */
    static TcpPeer connect(String name, List<MemoryRegion> sources, Descriptor remote, MooncakeConfig config, TransferContext context)
    {
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            if (config.socketBufferBytes() > 0) {
                channel.setOption(StandardSocketOptions.SO_SNDBUF, config.socketBufferBytes());
            }
            int timeout = Math.toIntExact(Math.max(1, config.connectTimeout().toMillis()));
            channel.socket().connect(new InetSocketAddress(remote.host(), remote.port()), timeout);
            FrameTags tags = context.authenticateConnection(channel.socket(), true);
            ByteBuffer hello = WireFormat.hello();
            while (hello.hasRemaining()) {
                channel.write(hello);
            }
            channel.socket().setSoTimeout(timeout);
            byte[] answer = new byte[WireFormat.HELLO_BYTES];
            readFully(channel.socket().getInputStream(), answer);
            if (!WireFormat.isHello(ByteBuffer.wrap(answer))) {
                throw new IOException("the receiver did not answer with a mooncake hello of protocol version " + WireFormat.VERSION);
            }
            channel.socket().setSoTimeout(READ_SLICE_MILLIS);
            return new TcpPeer(name, sources, remote, config, channel, tags, context);
        }
        catch (IOException e) {
            closeQuietly(channel);
            throw new UncheckedIOException("mooncake peer " + name + ": cannot connect to " + remote.host() + ":" + remote.port()
                    + " within connect-timeout " + config.connectTimeout() + ": " + e.getMessage(), e);
        }
    }

    @Override
    protected Transport transportKind()
    {
        return Transport.TCP;
    }

    @Override
    protected void checkUsable(TransferPlan plan)
            throws TransferFailure
    {
        if (broken != null) {
            throw new TransferFailure(label + " lost its connection (" + broken + "); the plan was not sent", true);
        }
    }

    @Override
    protected long writePages(TransferPlan plan, int region, int srcPage, int dstPage, int count)
            throws TransferFailure
    {
        MemoryRegion source = sources.get(region);
        long stride = source.pageStride();
        long bytes = count * stride;
        WireFormat.header(header, WireFormat.DATA, plan.room(), plan.chunk(), region, dstPage, count, bytes);
        ByteBuffer payload = source.segment().asSlice(srcPage * stride, bytes).asByteBuffer();
        ByteBuffer[] out;
        if (tags.tagBytes() == 0) {
            out = frame;
            out[0] = header;
            out[1] = payload;
        }
        else {
            // the payload's tag costs a read of its pages before they are sent (HMAC-SHA256; README "Security" has its cost)
            out = taggedFrame;
            out[0] = header;
            out[1] = ByteBuffer.wrap(tags.nextSent(WireFormat.HEADER_BYTES).update(header).value());
            out[2] = payload;
            out[3] = ByteBuffer.wrap(tags.nextSent(bytes).update(payload).value());
        }
        ByteBuffer last = out[out.length - 1];
        try {
            while (last.hasRemaining()) {
                channel.write(out);
            }
        }
        catch (IOException e) {
            throw breakConnection("sending pages to " + remote.host() + ":" + remote.port() + " failed: " + e.getMessage());
        }
        finally {
            java.util.Arrays.fill(out, null);
        }
        return bytes;
    }

    @Override
    protected long finishPlan(TransferPlan plan, long bytes)
            throws TransferFailure
    {
        String refusal = endAndAwaitReply(plan, WireFormat.END, bytes);
        if (refusal != null) {
            throw new TransferFailure(refusal, true);
        }
        return bytes;
    }

    @Override
    protected TransferFailure abortPlan(TransferPlan plan, String reason, boolean closing)
    {
        if (broken != null) {
            return new TransferFailure(reason, true);
        }
        if (closing) {
            // close() already shut our side down: the receiver drops the partial plan when it sees the end of stream.
            return breakConnection(reason);
        }
        try {
            endAndAwaitReply(plan, WireFormat.ABORT, 0);
            return new TransferFailure(reason, true);
        }
        catch (TransferFailure failure) {
            return new TransferFailure(reason + "; then " + failure.getMessage(), failure.settled());
        }
    }

    /** Sends END (or ABORT) and waits for the receiver's reply: null for ACK, the receiver's reason for NACK. */
    private String endAndAwaitReply(TransferPlan plan, byte kind, long bytes)
            throws TransferFailure
    {
        try {
            WireFormat.header(header, kind, plan.room(), plan.chunk(), 0, 0, 0, bytes);
            ByteBuffer tag = ByteBuffer.wrap(tags.nextSent(WireFormat.HEADER_BYTES).update(header).value());
            ByteBuffer[] out = {header, tag};
            while (tag.hasRemaining() || header.hasRemaining()) {
                channel.write(out);
            }
        }
        catch (IOException e) {
            throw breakConnection("ending the plan of room " + plan.room() + " chunk " + plan.chunk() + " failed: " + e.getMessage());
        }
        long deadline = System.nanoTime() + ackTimeout.toNanos();
        try {
            if (!readFully(reply, 0, WireFormat.REPLY_BYTES, deadline)) {
                throw breakConnection("the receiver did not answer the plan of room " + plan.room() + " chunk " + plan.chunk()
                        + " within ack-timeout " + ackTimeout);
            }
            ByteBuffer answer = ByteBuffer.wrap(reply);
            long roomId = answer.getLong(WireFormat.ROOM);
            int generation = answer.getInt(WireFormat.GENERATION);
            int chunk = answer.getInt(WireFormat.CHUNK);
            int reasonLength = answer.getInt(WireFormat.REPLY_REASON_LENGTH);
            byte verdict = answer.get(WireFormat.KIND);
            if (roomId != plan.room().roomId() || generation != plan.room().generation() || chunk != plan.chunk()
                    || (verdict != WireFormat.ACK && verdict != WireFormat.NACK) || reasonLength < 0 || reasonLength > WireFormat.MAX_REASON_BYTES) {
                throw breakConnection("the receiver's reply (kind " + verdict + ", room " + roomId + "#" + generation + " chunk " + chunk
                        + ") does not answer the plan of room " + plan.room() + " chunk " + plan.chunk());
            }
            byte[] reason = new byte[reasonLength];
            byte[] tag = new byte[tags.tagBytes()];
            if (!readFully(reason, 0, reasonLength, deadline) || !readFully(tag, 0, tag.length, deadline)) {
                throw breakConnection("the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " was cut short");
            }
            boolean authentic = tags.nextReceived(WireFormat.REPLY_BYTES + reasonLength)
                    .update(ByteBuffer.wrap(reply))
                    .update(ByteBuffer.wrap(reason))
                    .matches(tag);
            if (!authentic) {
                String why = "the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " fails its tag: it was altered "
                        + "or injected on the way (a man in the middle?), or the connection's frames are out of step";
                context.refused(remote.host(), why);
                throw breakConnection(why);
            }
            return verdict == WireFormat.ACK ? null : new String(reason, StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw breakConnection("waiting for the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " failed: " + e.getMessage());
        }
    }

    /** Reads {@code length} bytes unless the deadline passes first (false). End of stream is an {@link EOFException}. */
    private boolean readFully(byte[] buffer, int offset, int length, long deadline)
            throws IOException
    {
        int read = 0;
        while (read < length) {
            try {
                int n = in.read(buffer, offset + read, length - read);
                if (n < 0) {
                    throw new EOFException("the receiver closed the connection");
                }
                read += n;
            }
            catch (SocketTimeoutException e) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * The connection cannot carry plans any more. Before the plan in flight is reported, wait until the
     * receiver closes its side: its connection thread closes the socket only after its last write into the
     * pool, so the end of stream proves nothing more of this plan lands. Without that proof the failure is
     * unsettled and the peer's drains fail.
     */
    private TransferFailure breakConnection(String reason)
    {
        broken = reason;
        boolean settled = awaitReceiverClosed();
        closeQuietly(channel);
        if (!settled) {
            log.log(WARNING, label + ": " + reason + "; the receiver did not close its side within ack-timeout "
                    + ackTimeout + ", so a write may still land");
            return new TransferFailure(reason + "; the receiver did not confirm within ack-timeout " + ackTimeout
                    + " that it stopped writing", false);
        }
        return new TransferFailure(reason, true);
    }

    private boolean awaitReceiverClosed()
    {
        try {
            channel.shutdownOutput();
        }
        catch (IOException e) {
            log.log(DEBUG, label + ": shutdownOutput: " + e);
        }
        long deadline = System.nanoTime() + ackTimeout.toNanos();
        byte[] sink = new byte[4096];
        try {
            while (true) {
                try {
                    if (in.read(sink) < 0) {
                        return true;
                    }
                }
                catch (SocketTimeoutException e) {
                    if (System.nanoTime() - deadline > 0) {
                        return false;
                    }
                }
            }
        }
        catch (IOException e) {
            // A reset: the receiver's socket is gone, and with it its connection thread's writes.
            return true;
        }
    }

    @Override
    public void unblock()
    {
        // Wakes a write blocked on a full socket buffer; the transfer thread then confirms the receiver stopped.
        try {
            channel.shutdownOutput();
        }
        catch (IOException e) {
            log.log(DEBUG, label + ": shutdownOutput: " + e);
        }
    }

    /** On the transfer thread after its last plan (or from the backend's close): confirms the receiver stopped, then closes. */
    @Override
    public synchronized void close()
    {
        if (broken == null && channel.isOpen()) {
            awaitReceiverClosed();
        }
        closeQuietly(channel);
    }

    private static void readFully(InputStream in, byte[] buffer)
            throws IOException
    {
        int read = 0;
        while (read < buffer.length) {
            int n = in.read(buffer, read, buffer.length - read);
            if (n < 0) {
                throw new EOFException("the receiver closed the connection during the handshake");
            }
            read += n;
        }
    }

    private static void closeQuietly(SocketChannel channel)
    {
        if (channel == null) {
            return;
        }
        try {
            channel.close();
        }
        catch (IOException e) {
            log.log(DEBUG, "closing a mooncake connection: " + e);
        }
    }
}
