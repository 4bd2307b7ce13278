package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.FrameTags;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.RegionSlice;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferContext;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPlan;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
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
import java.util.ArrayDeque;
import java.util.List;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

/**
 * The tcp transport's sending side. Each page batch goes out as one frame per region: a header and the pages' bytes,
 * every region's frames in one gathering write straight from the source pool (no copy); after a plan's
 * frames the receiver's reply says whether it wrote them (ACK) or refused them (NACK). Plans are pipelined
 * ({@code PIPELINED}): the transfer thread writes the next plan's frames while the replies to the last ones are
 * still on their way, and a reply reader (one thread per connection, the only one that reads the socket) reports
 * each plan when its reply arrives, in order. A plan is reported only on its reply, or, when the connection
 * breaks, once the receiver closed its side (its connection thread closes the socket after its last write into
 * the pool), so "reported" still means "nothing of it can still land", which is what a drain promises.
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
    // One page batch's frames, every region's, go out in one gathering write: a scattered plan (one page a run) made
    // one write per page and region before, and small writes were what the tcp path spent its time on.
    private final ByteBuffer[] batchHeaders;
    private final ByteBuffer[] batch;
    // per slice, the buffer its rows are packed into (a head slice's rows are not contiguous in the pool); grown as needed
    private final ByteBuffer[] packBuffers;
    private int batchBuffers;
    private final byte[] reply = new byte[WireFormat.REPLY_BYTES];
    private final FrameTags tags;
    private final TransferContext context;
    // Why the connection can no longer carry plans (it broke, or a reply did not come); null while it can.
    private volatile String broken;
    // Plans whose END (or ABORT) was written and whose reply the reader has not read yet, oldest first; guarded by this.
    private final ArrayDeque<Awaiting> awaiting = new ArrayDeque<>();
    private boolean closing;
    // Set by the reply reader as it ends: whether the receiver was seen to stop writing; null while it runs. Guarded by this.
    private Boolean endedSettled;
    private final Thread replies;

    /** A plan waiting for its reply: {@code abort} is the reason it was aborted, null for a plan that ended normally. */
    private record Awaiting(PlanWork work, long bytes, String abort, long deadline) {}

    private TcpPeer(String name, List<MemoryRegion> sources, SliceMap slices, Descriptor remote, MooncakeConfig config, SocketChannel channel,
            FrameTags tags, TransferContext context)
            throws IOException
    {
        super(name, sources, slices, remote, config);
        this.channel = channel;
        this.tags = tags;
        this.context = context;
        this.in = channel.socket().getInputStream();
        this.ackTimeout = config.ackTimeout();
        this.batchHeaders = new ByteBuffer[slices.slices().size()];
        for (int slice = 0; slice < batchHeaders.length; slice++) {
            batchHeaders[slice] = ByteBuffer.allocateDirect(WireFormat.HEADER_BYTES);
        }
        this.batch = new ByteBuffer[4 * batchHeaders.length];
        this.packBuffers = new ByteBuffer[batchHeaders.length];
        this.replies = Thread.ofPlatform().daemon().name("mooncake-replies-" + name).start(this::readReplies);
    }

    /** Connects, authenticates as a member of the cluster ({@link TransferContext#authenticate}), then says the mooncake hello. */
    static TcpPeer connect(String name, List<MemoryRegion> sources, SliceMap slices, Descriptor remote, MooncakeConfig config, TransferContext context)
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
            return new TcpPeer(name, sources, slices, remote, config, channel, tags, context);
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
    protected long writePages(TransferPlan plan, int slice, int srcPage, int dstPage, int count)
            throws TransferFailure
    {
        RegionSlice part = slices.slices().get(slice);
        MemorySegment source = sources.get(part.srcRegion()).segment();
        long bytes = slices.bytes(slice, count);
        ByteBuffer frameHeader = batchHeaders[slice];
        ByteBuffer payload;
        if (part.wholeRows()) {
            // whole pages: one frame straight from the source pool (no copy)
            WireFormat.header(frameHeader, WireFormat.DATA, plan.room(), plan.chunk(), part.dstRegion(), dstPage, count, bytes);
            long[] start = new long[1];
            slices.pieces(slice, srcPage, dstPage, count, (ignored, srcOffset, dstOffset, length) -> start[0] = srcOffset);
            payload = source.asSlice(start[0], bytes).asByteBuffer();
        }
        else {
            // a head slice of each row: the rows packed behind their shape, for the receiver to place row by row
            int frame = Math.toIntExact(WireFormat.ROWS_PREFIX_BYTES + bytes);
            if (packBuffers[slice] == null || packBuffers[slice].capacity() < frame) {
                packBuffers[slice] = ByteBuffer.allocateDirect(frame);
            }
            ByteBuffer packed = packBuffers[slice].clear().limit(frame);
            packed.putLong(part.dstOffset()).putInt(slices.rowsPerPage()).putInt(Math.toIntExact(part.bytes()));
            MemorySegment rows = MemorySegment.ofBuffer(packed.duplicate().clear());
            long[] at = {WireFormat.ROWS_PREFIX_BYTES};
            slices.pieces(slice, srcPage, dstPage, count, (ignored, srcOffset, dstOffset, length) -> {
                MemorySegment.copy(source, srcOffset, rows, at[0], length);
                at[0] += length;
            });
            WireFormat.header(frameHeader, WireFormat.ROWS, plan.room(), plan.chunk(), part.dstRegion(), dstPage, count, frame);
            payload = packed.position(0);
        }
        long frameBytes = payload.remaining();
        batch[batchBuffers++] = frameHeader;
        if (tags.tagBytes() > 0) {
            // the payload's tag costs a read of its pages before they are sent (HMAC-SHA256; docs/security.md has its cost)
            batch[batchBuffers++] = ByteBuffer.wrap(tags.nextSent(WireFormat.HEADER_BYTES).update(frameHeader).value());
            batch[batchBuffers++] = payload;
            batch[batchBuffers++] = ByteBuffer.wrap(tags.nextSent(frameBytes).update(payload).value());
        }
        else {
            batch[batchBuffers++] = payload;
        }
        return bytes;
    }

    @Override
    protected void flushBatch()
            throws TransferFailure
    {
        ByteBuffer last = batch[batchBuffers - 1];
        try {
            while (last.hasRemaining()) {
                channel.write(batch, 0, batchBuffers);
            }
        }
        catch (IOException e) {
            String reason = "sending pages to " + remote.host() + ":" + remote.port() + " failed: " + e.getMessage();
            breakConnection(reason);
            // whether this is settled is the reply reader's to say, once the receiver's side is closed (see abortPlan)
            throw new TransferFailure(reason, false);
        }
        finally {
            java.util.Arrays.fill(batch, 0, batchBuffers, null);
            batchBuffers = 0;
        }
    }

    @Override
    protected void finishPlan(PlanWork work, long bytes)
    {
        TransferPlan plan = work.plan();
        String failed = writeEnd(plan, WireFormat.END, bytes);
        if (failed != null) {
            brokenWhileSending(work, failed);
            return;
        }
        expectReply(new Awaiting(work, bytes, null, System.nanoTime() + ackTimeout.toNanos()));
    }

    @Override
    protected void abortPlan(PlanWork work, String reason, boolean closing)
    {
        // frames queued for a batch that was never written are dropped: the receiver never sees them
        java.util.Arrays.fill(batch, 0, batchBuffers, null);
        batchBuffers = 0;
        if (broken != null || closing) {
            // close() already shut our side down (or the connection broke): the receiver drops the partial plan when it
            // sees the end of stream, and the reader reports the plan once the receiver closed its side.
            breakConnection(reason);
            expectReply(new Awaiting(work, 0, reason, System.nanoTime() + ackTimeout.toNanos()));
            return;
        }
        String failed = writeEnd(work.plan(), WireFormat.ABORT, 0);
        if (failed != null) {
            brokenWhileSending(work, reason + "; then " + failed);
            return;
        }
        expectReply(new Awaiting(work, 0, reason, System.nanoTime() + ackTimeout.toNanos()));
    }

    /** A write failed: the connection is broken, and the reader reports the plan once the receiver's side is closed. */
    private void brokenWhileSending(PlanWork work, String reason)
    {
        breakConnection(reason);
        expectReply(new Awaiting(work, 0, reason, System.nanoTime() + ackTimeout.toNanos()));
    }

    /** Sends END (or ABORT) for the plan; returns null, or why the write failed. */
    private String writeEnd(TransferPlan plan, byte kind, long bytes)
    {
        try {
            WireFormat.header(header, kind, plan.room(), plan.chunk(), 0, 0, 0, bytes);
            ByteBuffer tag = ByteBuffer.wrap(tags.nextSent(WireFormat.HEADER_BYTES).update(header).value());
            ByteBuffer[] out = {header, tag};
            while (tag.hasRemaining() || header.hasRemaining()) {
                channel.write(out);
            }
            return null;
        }
        catch (IOException e) {
            return "ending the plan of room " + plan.room() + " chunk " + plan.chunk() + " failed: " + e.getMessage();
        }
    }

    private void expectReply(Awaiting plan)
    {
        Boolean settled;
        synchronized (this) {
            settled = endedSettled;
            if (settled == null) {
                awaiting.addLast(plan);
                notifyAll();
                return;
            }
        }
        // the reader has ended: the connection is gone, and what it found about the receiver holds for this plan too
        fail(plan, settled);
    }

    private void fail(Awaiting plan, boolean settled)
    {
        String reason = plan.abort() != null ? plan.abort() : broken != null ? broken : label + " was closed";
        plan.work().failed(settled ? new TransferFailure(reason, true)
                : new TransferFailure(reason + "; the receiver did not confirm within ack-timeout " + ackTimeout + " that it stopped writing", false));
    }

    /**
     * The reply reader: reads the receiver's replies in order and reports each plan waiting for one. Once the
     * connection broke (or closes), it reads until the receiver closed its side and fails what is left waiting:
     * settled when the receiver's end of stream proved it stopped writing, unsettled when it did not within the ack
     * timeout.
     */
    private void readReplies()
    {
        try {
            while (true) {
                Awaiting next;
                synchronized (this) {
                    while (awaiting.isEmpty() && broken == null && !closing) {
                        wait();
                    }
                    next = awaiting.peekFirst();
                }
                if (broken != null || next == null) {
                    break;
                }
                String verdict = readReply(next);
                if (broken != null) {
                    break;
                }
                synchronized (this) {
                    awaiting.pollFirst();
                }
                report(next, verdict);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            broken = broken != null ? broken : label + ": its reply reader was interrupted";
        }
        boolean settled = awaitReceiverClosed();
        closeQuietly(channel);
        if (!settled) {
            if (broken == null) {
                broken = label + " was closed";
            }
            log.log(WARNING, label + ": " + broken + "; the receiver did not close its side within ack-timeout " + ackTimeout
                    + ", so a write may still land");
        }
        List<Awaiting> left;
        synchronized (this) {
            left = List.copyOf(awaiting);
            awaiting.clear();
            endedSettled = settled;
        }
        for (Awaiting plan : left) {
            fail(plan, settled);
        }
    }

    /** Reports one plan from its reply: null for ACK, else the receiver's reason for NACK. */
    private static void report(Awaiting plan, String refusal)
    {
        if (plan.abort() != null) {
            // the receiver confirmed it dropped the aborted plan: nothing of it lands any more
            plan.work().failed(new TransferFailure(plan.abort(), true));
        }
        else if (refusal == null) {
            plan.work().completed(plan.bytes());
        }
        else {
            plan.work().failed(new TransferFailure(refusal, true));
        }
    }

    /**
     * Reads the reply to {@code next}: null for ACK, the receiver's reason for NACK. A reply that does not come, does
     * not answer this plan or fails its tag breaks the connection ({@link #broken} is then set; the return value means nothing).
     */
    private String readReply(Awaiting next)
    {
        TransferPlan plan = next.work().plan();
        try {
            if (!readFully(reply, 0, WireFormat.REPLY_BYTES, next.deadline())) {
                breakConnection("the receiver did not answer the plan of room " + plan.room() + " chunk " + plan.chunk()
                        + " within ack-timeout " + ackTimeout);
                return null;
            }
            ByteBuffer answer = ByteBuffer.wrap(reply);
            long roomId = answer.getLong(WireFormat.ROOM);
            int generation = answer.getInt(WireFormat.GENERATION);
            int chunk = answer.getInt(WireFormat.CHUNK);
            int reasonLength = answer.getInt(WireFormat.REPLY_REASON_LENGTH);
            byte verdict = answer.get(WireFormat.KIND);
            if (roomId != plan.room().roomId() || generation != plan.room().generation() || chunk != plan.chunk()
                    || (verdict != WireFormat.ACK && verdict != WireFormat.NACK) || reasonLength < 0 || reasonLength > WireFormat.MAX_REASON_BYTES) {
                breakConnection("the receiver's reply (kind " + verdict + ", room " + roomId + "#" + generation + " chunk " + chunk
                        + ") does not answer the plan of room " + plan.room() + " chunk " + plan.chunk());
                return null;
            }
            byte[] reason = new byte[reasonLength];
            byte[] tag = new byte[tags.tagBytes()];
            if (!readFully(reason, 0, reasonLength, next.deadline()) || !readFully(tag, 0, tag.length, next.deadline())) {
                breakConnection("the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " was cut short");
                return null;
            }
            boolean authentic = tags.nextReceived(WireFormat.REPLY_BYTES + reasonLength)
                    .update(ByteBuffer.wrap(reply))
                    .update(ByteBuffer.wrap(reason))
                    .matches(tag);
            if (!authentic) {
                String why = "the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " fails its tag: it was altered "
                        + "or injected on the way (a man in the middle?), or the connection's frames are out of step";
                context.refused(remote.host(), why);
                breakConnection(why);
                return null;
            }
            return verdict == WireFormat.ACK ? null : new String(reason, StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            breakConnection("waiting for the receiver's reply to room " + plan.room() + " chunk " + plan.chunk() + " failed: " + e.getMessage());
            return null;
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
     * The connection cannot carry plans any more: no new plan is sent, our side is shut down, and the reply reader
     * waits until the receiver closes its side before it fails the plans still waiting (see {@link #readReplies}).
     */
    private void breakConnection(String reason)
    {
        synchronized (this) {
            if (broken == null) {
                broken = reason;
            }
            notifyAll();
        }
        try {
            channel.shutdownOutput();
        }
        catch (IOException e) {
            log.log(DEBUG, label + ": shutdownOutput: " + e);
        }
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

    /**
     * On the transfer thread after its last plan (or from the backend's close): shuts our side down and lets the reply
     * reader confirm the receiver stopped (or give up after the ack timeout), then the socket is closed.
     */
    @Override
    public void close()
    {
        synchronized (this) {
            closing = true;
            notifyAll();
        }
        try {
            channel.shutdownOutput();
        }
        catch (IOException e) {
            log.log(DEBUG, label + ": shutdownOutput: " + e);
        }
        if (Thread.currentThread() != replies) {
            try {
                replies.join(ackTimeout.plusSeconds(1));
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
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
