package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.control.ControlMessage.Heartbeat;
import io.handoff.core.security.AuthenticationException;
import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.FrameMac;
import io.handoff.core.security.Session;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
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
import java.util.function.Consumer;

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
 *
 * <p>With a cluster secret the channel exists only after a {@link ClusterHandshake} (the connecting side runs it in
 * {@link #connect}, the accepting side in {@link ControlServer}), and every frame then carries its session tag: a
 * frame that fails it closes the channel before it is decoded. Frames are buffered as they arrive, within their
 * type's bound and the process's {@link FrameBudget} ({@link FrameReader}).
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
    private final FrameReader in;
    private final DataOutputStream out;
    private final FrameMac sendingTags;
    private final ControlSecurity security;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final Liveness liveness;
    private final DeadlineClock clock;
    private final Listener listener;
    private final String peer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong heartbeats = new AtomicLong();
    private final long openedNanos;
    private final AtomicBoolean refusalCounted = new AtomicBoolean();
    // a connection this side accepted is admitted once the owner accepted its hello; one this side opened, at once
    private volatile boolean admitted;
    private volatile Consumer<ControlChannel> onAdmitted = channel -> {};
    // when the write in progress began, or 0 when none is: a peer that stops reading must not hold a sender forever
    private volatile long writingSinceNanos;
    private volatile String closeReason;
    private volatile long lastReceivedNanos;
    private volatile long lastSentNanos;
    private volatile ScheduledFuture<?> ticks;

    private ControlChannel(Socket socket, Liveness liveness, DeadlineClock clock, Listener listener, Session session, ControlSecurity security,
            boolean admitted)
            throws IOException
    {
        this.admitted = admitted;
        this.security = requireNonNull(security, "security is null");
        this.socket = socket;
        this.liveness = requireNonNull(liveness, "liveness is null");
        this.clock = requireNonNull(clock, "clock is null");
        this.listener = requireNonNull(listener, "listener is null");
        this.peer = String.valueOf(socket.getRemoteSocketAddress());
        socket.setTcpNoDelay(true);
        this.in = new FrameReader(new DataInputStream(new BufferedInputStream(socket.getInputStream())), security.budget(),
                session == null ? null : session.receiving());
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        this.sendingTags = session == null ? null : session.sending();
        long now = clock.nanos();
        this.openedNanos = now;
        this.lastReceivedNanos = now;
        this.lastSentNanos = now;
    }

    /** Connects to a peer's {@link ControlServer} without a cluster secret and starts reading. */
    public static ControlChannel connect(InetSocketAddress address, Duration connectTimeout, Liveness liveness, DeadlineClock clock, Listener listener)
            throws IOException
    {
        return connect(address, connectTimeout, liveness, clock, ControlSecurity.loopbackOnly(), listener);
    }

    /**
     * Connects to a peer's {@link ControlServer}, authenticates when {@code security} has a cluster secret (an
     * {@link AuthenticationException} says why not), and starts reading.
     */
    public static ControlChannel connect(InetSocketAddress address, Duration connectTimeout, Liveness liveness, DeadlineClock clock,
            ControlSecurity security, Listener listener)
            throws IOException
    {
        requireNonNull(address, "address is null");
        requireNonNull(connectTimeout, "connectTimeout is null");
        requireNonNull(security, "security is null");
        Socket socket = new Socket();
        try {
            socket.connect(address, Math.toIntExact(connectTimeout.toMillis()));
            Session session = null;
            if (security.settings().authenticates()) {
                try {
                    session = ClusterHandshake.initiate(socket, security.settings().secret().orElseThrow(), ControlSecurity.PURPOSE,
                            ControlSecurity.INITIATOR, ControlSecurity.RESPONDER, security.settings().handshakeTimeout());
                }
                catch (AuthenticationException e) {
                    // the caller reports it, with the peer it meant to reach
                    security.failures().failed();
                    throw e;
                }
            }
            return open(socket, liveness, clock, listener, session, security, true, channel -> {});
        }
        catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /**
     * @param session the completed handshake's session, or null without a cluster secret
     * @param admitted false for a connection this side accepted: it is sent nothing unasked (no heartbeat) until
     *         {@link #admit}, which then runs {@code onAdmitted}
     */
    static ControlChannel open(Socket socket, Liveness liveness, DeadlineClock clock, Listener listener, Session session,
            ControlSecurity security, boolean admitted, Consumer<ControlChannel> onAdmitted)
            throws IOException
    {
        ControlChannel channel = new ControlChannel(socket, liveness, clock, listener, session, security, admitted);
        channel.onAdmitted = requireNonNull(onAdmitted, "onAdmitted is null");
        listener.opened(channel);
        Thread.ofVirtual().name("handoff-control-" + channel.peer).start(channel::readLoop);
        return channel;
    }

    /** The peer's address, for messages and as the key of its rooms. */
    public String peer()
    {
        return peer;
    }

    /** The peer's address without the port (each connection has a new one): what refusals are counted by. */
    public String peerHost()
    {
        InetAddress address = socket.getInetAddress();
        return address == null ? peer : address.getHostAddress();
    }

    /** This end of the connection and the peer's, for checking a same-host peer's claims ({@code LocalPeer}). */
    public InetSocketAddress localAddress()
    {
        return (InetSocketAddress) socket.getLocalSocketAddress();
    }

    public InetSocketAddress remoteAddress()
    {
        return (InetSocketAddress) socket.getRemoteSocketAddress();
    }

    /**
     * The owner accepted the peer's hello: from now on the channel sends heartbeats and is no longer counted against the
     * caps and the hello deadline of unadmitted connections. Idempotent.
     */
    public void admit()
    {
        if (!admitted) {
            admitted = true;
            onAdmitted.accept(this);
        }
    }

    /** Whether the peer is admitted (its hello accepted; always, on a connection this side opened). */
    public boolean admitted()
    {
        return admitted;
    }

    /**
     * True the first time only: whoever refuses or drops this connection counts it when this says so, so that a
     * connection is one refusal in the metrics however many reasons it gave.
     */
    public boolean countRefusal()
    {
        return refusalCounted.compareAndSet(false, true);
    }

    /** When the connection opened, on the channel's clock. */
    public long openedNanos()
    {
        return openedNanos;
    }

    /** Whether the peer proved the cluster secret (false on a channel of a node without one). */
    public boolean authenticated()
    {
        return sendingTags != null;
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
        return send(message, true);
    }

    // a heartbeat's write does not move lastSentNanos: tick() already did, when it decided the heartbeat was due
    private boolean send(ControlMessage message, boolean marksSent)
    {
        byte[] frame = ControlCodec.encode(message);
        if (closed.get()) {
            return false;
        }
        sendLock.lock();
        try {
            writingSinceNanos = Math.max(1, clock.nanos());
            out.writeInt(frame.length);
            out.write(frame);
            if (sendingTags != null) {
                out.write(sendingTags.tag(frame, frame.length));
            }
            out.flush();
            if (marksSent) {
                lastSentNanos = clock.nanos();
            }
            return true;
        }
        catch (IOException e) {
            close("cannot send to " + peer + ": " + e.getMessage());
            return false;
        }
        finally {
            writingSinceNanos = 0;
            sendLock.unlock();
        }
    }

    /**
     * Checks the peer's liveness, then, on an admitted channel, sends a heartbeat when nothing was sent for a heartbeat
     * interval. The heartbeat is written on a thread of its own: a peer that stops reading can stall that write, never
     * the caller (one ticker serves every channel, and their deadlines).
     */
    public void tick()
    {
        if (!checkLiveness() || !admitted) {
            return;
        }
        long now = clock.nanos();
        if (now - lastSentNanos >= liveness.heartbeatInterval().toNanos()) {
            // due from now on, whenever the write ends: a stuck write is found by checkLiveness within the peer timeout,
            // and the few heartbeats queued behind it until then end with the channel
            lastSentNanos = now;
            Heartbeat heartbeat = new Heartbeat(heartbeats.incrementAndGet());
            Thread.ofVirtual().name("handoff-control-heartbeat").start(() -> send(heartbeat, false));
        }
    }

    /**
     * Closes the channel if no frame arrived from the peer for the peer timeout, or a write to it has been stuck that
     * long (it stopped reading); returns whether it is open.
     */
    public boolean checkLiveness()
    {
        long now = clock.nanos();
        long silent = now - lastReceivedNanos;
        long writing = writingSinceNanos;
        if (silent >= liveness.peerTimeout().toNanos()) {
            close("no frame from " + peer + " for " + silent / 1_000_000 + " ms (peer timeout " + liveness.peerTimeout().toMillis() + " ms)");
        }
        else if (writing != 0 && now - writing >= liveness.peerTimeout().toNanos()) {
            close(peer + " has not read what this side sent for " + (now - writing) / 1_000_000 + " ms (peer timeout "
                    + liveness.peerTimeout().toMillis() + " ms)");
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

    private void answerWithoutSecret()
    {
        sendLock.lock();
        try {
            ClusterHandshake.answerWithoutSecret(out);
        }
        catch (IOException e) {
            log.debug("cannot tell {} that this node has no cluster secret", peer, e);
        }
        finally {
            sendLock.unlock();
        }
    }

    private void readLoop()
    {
        try {
            while (!closed.get()) {
                byte[] frame = in.next();
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
        catch (FrameReader.PeerAuthenticates e) {
            answerWithoutSecret();
            if (countRefusal()) {
                security.failures().refused(ControlServer.LISTENER, peerHost(), "peer-has-secret", e.getMessage());
            }
            close("cluster authentication with " + peer + " is impossible: " + e.getMessage());
        }
        catch (AuthenticationException e) {
            if (countRefusal()) {
                security.failures().refused(ControlServer.LISTENER, peerHost(), e);
            }
            close("cluster authentication of " + peer + " failed: " + e.getMessage());
        }
        catch (FrameReader.BudgetExhausted e) {
            close("cannot buffer a frame from " + peer + ": " + e.getMessage());
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
