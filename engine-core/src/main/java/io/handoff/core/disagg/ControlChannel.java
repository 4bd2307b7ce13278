package io.handoff.core.disagg;

import io.handoff.core.disagg.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.ControlMessage.Heartbeat;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

import static java.util.Objects.requireNonNull;

/**
 * One control connection between a prefill and a decode over TCP: frames of an int length and a
 * {@link ControlCodec} message, one reader thread that hands every message (but heartbeats) to the
 * {@link Listener}, and sends from any thread. Liveness is explicit: {@link #tick} sends a heartbeat when
 * one is due and closes the channel when nothing at all arrived from the peer for the timeout. Time comes
 * from the injected clock, so a test drives loss with a manual clock and {@link #checkLiveness()}; in
 * production {@link #scheduleTicks} runs the tick.
 *
 * <p>A channel closes once, for a reason (peer closed, malformed frame, silence, local close), and the
 * listener hears {@link Listener#closed} exactly once; the caller then fails the peer's rooms.
 */
public final class ControlChannel
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ControlChannel.class);

    /** How often to send a heartbeat, and how long a silent peer is considered alive. */
    public record Liveness(Duration heartbeatInterval, Duration peerTimeout)
    {
        public static final Liveness DEFAULT = new Liveness(Duration.ofSeconds(2), Duration.ofSeconds(10));

        public Liveness
        {
            requireNonNull(heartbeatInterval, "heartbeatInterval is null");
            requireNonNull(peerTimeout, "peerTimeout is null");
            if (heartbeatInterval.isNegative() || heartbeatInterval.isZero() || peerTimeout.compareTo(heartbeatInterval.multipliedBy(2)) < 0) {
                throw new IllegalArgumentException("peer timeout " + peerTimeout + " must be at least twice the heartbeat interval "
                        + heartbeatInterval + " (one late heartbeat must not look like a dead peer)");
            }
        }
    }

    public interface Listener
    {
        /** The channel is open and its reader not started yet: a good time to send a hello. */
        default void opened(ControlChannel channel) {}

        /** A message from the peer, on the channel's reader thread, in arrival order. */
        void received(ControlChannel channel, ControlMessage message);

        /** The channel closed; called once, on whichever thread closed it. */
        void closed(ControlChannel channel, String reason);
    }

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final Liveness liveness;
    private final DeadlineClock clock;
    private final Listener listener;
    private final String peer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong heartbeats = new AtomicLong();
    private volatile String closeReason;
    private volatile long lastReceivedNanos;
    private volatile long lastSentNanos;
    private volatile ScheduledFuture<?> ticks;

    private ControlChannel(Socket socket, Liveness liveness, DeadlineClock clock, Listener listener)
            throws IOException
    {
        this.socket = socket;
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.listener = requireNonNull(listener, "listener is null");
        this.peer = String.valueOf(socket.getRemoteSocketAddress());
        socket.setTcpNoDelay(true);
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        long now = clock.nanos();
        this.lastReceivedNanos = now;
        this.lastSentNanos = now;
    }

    /** Connects to a peer's {@link ControlServer} and starts reading. */
    public static ControlChannel connect(InetSocketAddress address, Duration connectTimeout, Liveness liveness, DeadlineClock clock, Listener listener)
            throws IOException
    {
        requireNonNull(address, "address is null");
        requireNonNull(connectTimeout, "connectTimeout is null");
        Socket socket = new Socket();
        try {
            socket.connect(address, Math.toIntExact(connectTimeout.toMillis()));
            return open(socket, liveness, clock, listener);
        }
        catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    static ControlChannel open(Socket socket, Liveness liveness, DeadlineClock clock, Listener listener)
            throws IOException
    {
        ControlChannel channel = new ControlChannel(socket, liveness, clock, listener);
        listener.opened(channel);
        Thread.ofVirtual().name("handoff-control-" + channel.peer).start(channel::readLoop);
        return channel;
    }

    /** The peer's address, for messages and as the key of its rooms. */
    public String peer()
    {
        return peer;
    }

    public boolean isOpen()
    {
        return !closed.get();
    }

    public Optional<String> closeReason()
    {
        return Optional.ofNullable(closeReason);
    }

    /** How many heartbeats {@link #tick} has sent. */
    public long heartbeatsSent()
    {
        return heartbeats.get();
    }

    /**
     * Sends one message; safe from any thread. Returns false, without throwing, when the channel is closed
     * or the write failed (which closes it): the listener hears why.
     */
    public boolean send(ControlMessage message)
    {
        byte[] frame = ControlCodec.encode(message);
        if (closed.get()) {
            return false;
        }
        sendLock.lock();
        try {
            out.writeInt(frame.length);
            out.write(frame);
            out.flush();
            lastSentNanos = clock.nanos();
            return true;
        }
        catch (IOException e) {
            close("cannot send to " + peer + ": " + e.getMessage());
            return false;
        }
        finally {
            sendLock.unlock();
        }
    }

    /** Sends a heartbeat when nothing was sent for a heartbeat interval, then checks the peer's liveness. */
    public void tick()
    {
        if (clock.nanos() - lastSentNanos >= liveness.heartbeatInterval().toNanos()) {
            send(new Heartbeat(heartbeats.incrementAndGet()));
        }
        checkLiveness();
    }

    /** Closes the channel if no frame arrived from the peer for the peer timeout; returns whether it is open. */
    public boolean checkLiveness()
    {
        long silent = clock.nanos() - lastReceivedNanos;
        if (silent >= liveness.peerTimeout().toNanos()) {
            close("no frame from " + peer + " for " + silent / 1_000_000 + " ms (peer timeout " + liveness.peerTimeout().toMillis() + " ms)");
        }
        return isOpen();
    }

    /** Runs {@link #tick} every half heartbeat interval on {@code scheduler} until the channel closes. */
    public void scheduleTicks(ScheduledExecutorService scheduler)
    {
        long period = Math.max(1, liveness.heartbeatInterval().toMillis() / 2);
        ticks = scheduler.scheduleAtFixedRate(this::tick, period, period, TimeUnit.MILLISECONDS);
        if (closed.get()) {
            ticks.cancel(false);
        }
    }

    @Override
    public void close()
    {
        close("closed locally");
    }

    /** Closes the socket (which also unblocks a stuck reader or writer) and tells the listener, once. */
    public void close(String reason)
    {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeReason = reason;
        ScheduledFuture<?> scheduled = ticks;
        if (scheduled != null) {
            scheduled.cancel(false);
        }
        try {
            socket.close();
        }
        catch (IOException e) {
            log.debug("closing control connection to {}", peer, e);
        }
        listener.closed(this, reason);
    }

    private void readLoop()
    {
        try {
            while (!closed.get()) {
                int length = in.readInt();
                if (length < 1 || length > ControlCodec.MAX_FRAME_BYTES) {
                    close("malformed frame from " + peer + ": length " + length + " is outside 1.." + ControlCodec.MAX_FRAME_BYTES);
                    return;
                }
                byte[] frame = new byte[length];
                in.readFully(frame);
                lastReceivedNanos = clock.nanos();
                ControlMessage message = ControlCodec.decode(frame);
                if (!(message instanceof Heartbeat)) {
                    listener.received(this, message);
                }
            }
        }
        catch (EOFException e) {
            close("peer " + peer + " closed the connection");
        }
        catch (MalformedFrameException e) {
            close("malformed frame from " + peer + ": " + e.getMessage());
        }
        catch (IOException e) {
            close("connection to " + peer + " failed: " + e.getMessage());
        }
        catch (RuntimeException e) {
            log.error("control message handler failed for {}", peer, e);
            close("handling a message from " + peer + " failed: " + e);
        }
    }
}
