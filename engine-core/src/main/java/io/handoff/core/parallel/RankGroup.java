package io.handoff.core.parallel;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.RankLostException;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.security.ClusterSecurity;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static java.util.Objects.requireNonNull;

/**
 * Rank 0 of a tensor-parallel group once its ranks have joined ({@link RankAdmission}): it sends each step's plan, takes
 * part in every collective (through shared memory when every rank is on this host, else as the hub of the links: each
 * rank sends it its pieces, it sends every rank the whole), and watches that every rank lives.
 *
 * <p>A rank is lost when its link closes, its process exits, or it misses heartbeats for the configured time. The group
 * then stays failed: every collective, the one in flight included, throws {@link RankLostException} naming the rank,
 * and {@link #ranks()} shows which one is unhealthy. Only a restart of the server recovers.
 */
public final class RankGroup
        implements Collective, AutoCloseable
{
    private static final Logger log = LogManager.getLogger(RankGroup.class);
    private static final int HEARTBEAT_MILLIS = 1000;

    /** What a rank says about itself; {@code problem} is empty while it is healthy. */
    public record RankStatus(int rank, long pid, String host, boolean healthy, String problem) {}

    /**
     * What the group needs: its size, where it listens, how ranks prove themselves, how long it waits for them.
     *
     * @param poolFile the file holding every rank's KV pool, which each rank maps its slice of (the ranks of a prefill or
     *         decode server, whose transfer backend reaches every rank's pages through the leader), or empty
     */
    public record Settings(int size, String host, int port, ClusterSecurity security, Duration startupTimeout, Duration heartbeatTimeout,
            Duration stepTimeout, long maxFrameBytes, String identity, int pages, Optional<Path> poolFile)
    {
        public Settings
        {
            new TensorShard(0, size);
            requireNonNull(poolFile, "poolFile is null");
            requireNonNull(host, "host is null");
            requireNonNull(security, "security is null");
            requireNonNull(identity, "identity is null");
        }
    }

    private final Settings settings;
    private final ServerSocket server;
    private final Peer[] peers;
    private final AtomicReference<RankLostException> lost = new AtomicReference<>();
    private final List<java.util.function.Consumer<RankLostException>> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Thread monitor;
    private SharedExchange shared;
    private volatile boolean closed;
    private float[] scratch = new float[0];

    private RankGroup(Settings settings, ServerSocket server, RankAdmission.Joined[] joined)
    {
        this.settings = settings;
        this.server = server;
        this.peers = new Peer[settings.size()];
        for (int rank = 1; rank < settings.size(); rank++) {
            RankAdmission.Joined member = joined[rank];
            peers[rank] = new Peer(member.rank(), member.pid(), member.host(), member.link(), member.process(), member.local());
        }
        this.monitor = Thread.ofPlatform().daemon().name("handoff-rank-monitor").unstarted(this::monitor);
    }

    /**
     * Listens, has {@code launcher} start ranks 1..size-1 (none when it is {@link RankLauncher#NONE}: they join on their
     * own), and returns once every rank has loaded its shard and said it is ready ({@link RankAdmission}).
     */
    public static RankGroup start(Settings settings, RankLauncher launcher)
    {
        settings.security().checkListen("the tensor-parallel leader", settings.host());
        ServerSocket server;
        try {
            server = new ServerSocket();
            server.bind(new InetSocketAddress(InetAddress.getByName(settings.host()), settings.port()), settings.size());
        }
        catch (IOException e) {
            throw new IllegalStateException("the tensor-parallel leader cannot listen on " + settings.host() + ":" + settings.port() + ": " + e.getMessage(), e);
        }
        RankGroup group;
        try {
            group = new RankGroup(settings, server, RankAdmission.admit(settings, server, launcher));
        }
        catch (RuntimeException e) {
            closeQuietly(server);
            throw e;
        }
        try {
            group.shareMemory();
            for (int rank = 1; rank < settings.size(); rank++) {
                group.peers[rank].reader.start();
            }
            group.monitor.start();
        }
        catch (RuntimeException e) {
            group.close();
            throw e;
        }
        log.info("tensor-parallel group of {} ranks ready at {} ({}): {}", settings.size(), group.address(),
                group.shared == null ? "collectives over the links" : "collectives through shared memory " + group.shared.file(), group.ranks());
        return group;
    }

    /** Where ranks connect: host and port. */
    public String address()
    {
        return settings.host() + ":" + server.getLocalPort();
    }

    /**
     * When every rank is on this host, a shared mapping for the collectives (each rank is told its path, or an empty one:
     * the links then carry everything).
     */
    private void shareMemory()
    {
        boolean local = true;
        for (int rank = 1; rank < peers.length; rank++) {
            local &= peers[rank].local;
        }
        if (local) {
            try {
                shared = SharedExchange.create(settings.size());
            }
            catch (IOException | RuntimeException e) {
                log.warn("no shared memory for the tensor-parallel collectives ({}); they go over the links", e.getMessage());
            }
        }
        byte[] path = RankLink.utf8(shared == null ? "" : shared.file().toString());
        for (int rank = 1; rank < peers.length; rank++) {
            try {
                peers[rank].link.send(RankLink.SHARED, 8 + path.length, b -> b.putLong(ProcessHandle.current().pid()).put(path));
            }
            catch (IOException e) {
                throw new IllegalStateException("rank " + rank + "'s link failed as the group started: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public TensorShard shard()
    {
        return new TensorShard(0, settings.size());
    }

    /** Whether a collective with these pieces goes through shared memory (every rank on this host, pieces within a slot). */
    public boolean sharesMemory(Pieces pieces)
    {
        return shared != null && shared.fits(pieces);
    }

    /** Sends every rank the step it runs next, before this rank runs its own part of it. */
    public void broadcast(ForwardBatch batch, int[] logitRows)
    {
        checkAlive();
        int size = StepCodec.size(batch, logitRows);
        for (int rank = 1; rank < peers.length; rank++) {
            Peer peer = peers[rank];
            try {
                peer.link.send(RankLink.PLAN, size, b -> StepCodec.write(batch, logitRows, b));
            }
            catch (IOException e) {
                throw lose(rank, "sending the step failed: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public void allGather(float[] buf, Pieces pieces)
    {
        if (sharesMemory(pieces)) {
            exchange(buf, pieces);
            return;
        }
        collect(buf, pieces);
        int total = 0;
        for (int r = 0; r < peers.length; r++) {
            total += pieces.floats(r);
        }
        scratch = Floats.scratch(scratch, total);
        float[] values = scratch;
        for (int rank = 1; rank < peers.length; rank++) {
            try {
                peers[rank].link.send(RankLink.GATHERED, 4 * total, b -> {
                    for (int r = 0; r < peers.length; r++) {
                        Floats.put(b, pieces, r, buf, values);
                    }
                });
            }
            catch (IOException e) {
                throw lose(rank, "sending the gathered values failed: " + e.getMessage(), e);
            }
        }
    }

    @Override
    public void gather(float[] buf, Pieces pieces)
    {
        if (sharesMemory(pieces)) {
            exchange(buf, pieces);
            return;
        }
        collect(buf, pieces);
    }

    private void exchange(float[] buf, Pieces pieces)
    {
        checkAlive();
        try {
            shared.exchange(buf, pieces, true, (rank, nanos) -> lost.get() == null && !closed && nanos < settings.stepTimeout().toNanos());
        }
        catch (SharedExchange.GroupFailedException e) {
            checkAlive();
            throw stalled(e.rank());
        }
    }

    /** A rank that is alive and heard from but sent nothing of the step within the step timeout: stuck, so lost. */
    private RankLostException stalled(int rank)
    {
        return lose(rank, "it sent nothing of the step for " + settings.stepTimeout().toSeconds() + " s (handoff.parallel.step-timeout)", null);
    }

    /** Every other rank's pieces into {@code buf}, each frame exactly their size. */
    private void collect(float[] buf, Pieces pieces)
    {
        checkAlive();
        for (int rank = 1; rank < peers.length; rank++) {
            ByteBuffer payload = next(rank);
            if (payload.remaining() != 4 * pieces.floats(rank)) {
                throw lose(rank, "it sent " + payload.remaining() / 4 + " values where the step needs " + pieces.floats(rank)
                        + ": the ranks are out of step", null);
            }
            scratch = Floats.scratch(scratch, pieces.floats(rank));
            try {
                Floats.take(payload, pieces, rank, buf, scratch);
            }
            catch (IOException e) {
                throw lose(rank, e.getMessage(), e);
            }
        }
    }

    private ByteBuffer next(int rank)
    {
        Peer peer = peers[rank];
        long deadline = System.nanoTime() + settings.stepTimeout().toNanos();
        while (true) {
            checkAlive();
            if (System.nanoTime() > deadline) {
                throw stalled(rank);
            }
            try {
                ByteBuffer payload = peer.pieces.poll(100, TimeUnit.MILLISECONDS);
                if (payload != null) {
                    return payload;
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RankLostException(rank, "interrupted while waiting for it", e);
            }
        }
    }

    private void checkAlive()
    {
        RankLostException failure = lost.get();
        if (failure != null) {
            throw new RankLostException(failure.rank(), failure.reason(), failure);
        }
        if (closed) {
            throw new IllegalStateException("the tensor-parallel group is closed");
        }
    }

    /** Marks the group failed by {@code rank} (the first loss wins) and returns the exception to throw. */
    private RankLostException lose(int rank, String reason, Throwable cause)
    {
        RankLostException failure = new RankLostException(rank, reason, cause);
        if (lost.compareAndSet(null, failure) && shared != null) {
            // ranks waiting in a collective stop waiting
            shared.fail();
        }
        if (lost.get() == failure && !closed) {
            Peer peer = peers[rank];
            // a rank this process started and that is stuck rather than gone: it holds cores and memory for nothing now
            if (peer != null) {
                peer.process.ifPresent(Process::destroyForcibly);
            }
            log.error("tensor-parallel rank {} (pid {}, {}) lost: {}; this server fails every request until it is restarted", rank,
                    peer == null ? -1 : peer.pid, peer == null ? "?" : peer.host, reason);
            for (java.util.function.Consumer<RankLostException> listener : listeners) {
                listener.accept(failure);
            }
        }
        return lost.get() == failure ? failure : new RankLostException(lost.get().rank(), lost.get().reason(), lost.get());
    }

    /**
     * Calls {@code listener} once, on the thread that finds it, when a rank is lost (at once when one is lost already): for
     * the scheduler to fail the requests no step of which runs meanwhile (waiting for their KV, or for a page).
     */
    public void onLost(java.util.function.Consumer<RankLostException> listener)
    {
        requireNonNull(listener, "listener is null");
        java.util.concurrent.atomic.AtomicBoolean called = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.function.Consumer<RankLostException> once = failure -> {
            if (called.compareAndSet(false, true)) {
                listener.accept(failure);
            }
        };
        listeners.add(once);
        RankLostException failure = lost.get();
        if (failure != null) {
            once.accept(failure);
        }
    }

    /** Every rank, this one first. */
    public List<RankStatus> ranks()
    {
        RankLostException failure = lost.get();
        List<RankStatus> ranks = new ArrayList<>();
        ranks.add(new RankStatus(0, ProcessHandle.current().pid(), hostName(), true, ""));
        for (int rank = 1; rank < peers.length; rank++) {
            Peer peer = peers[rank];
            boolean healthy = failure == null || failure.rank() != rank;
            ranks.add(new RankStatus(rank, peer == null ? -1 : peer.pid, peer == null ? "" : peer.host, healthy && peer != null,
                    healthy ? "" : failure.getMessage()));
        }
        return ranks;
    }

    /** Why the group cannot run steps any more, when a rank is lost. */
    public Optional<String> failure()
    {
        return Optional.ofNullable(lost.get()).map(Throwable::getMessage);
    }

    private void monitor()
    {
        while (!closed) {
            long now = System.nanoTime();
            for (int rank = 1; rank < peers.length; rank++) {
                Peer peer = peers[rank];
                if (peer.process.isPresent() && !peer.process.get().isAlive()) {
                    lose(rank, "its process " + peer.pid + " exited with code " + peer.process.get().exitValue(), null);
                }
                else if (now - peer.lastHeard > settings.heartbeatTimeout().toNanos()) {
                    lose(rank, "no word from it for " + settings.heartbeatTimeout().toSeconds() + " s (handoff.parallel.heartbeat-timeout)", null);
                }
                try {
                    peer.link.send(RankLink.HEARTBEAT, 0, b -> {});
                }
                catch (IOException e) {
                    lose(rank, "its link failed: " + e.getMessage(), e);
                }
            }
            try {
                Thread.sleep(HEARTBEAT_MILLIS);
            }
            catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void close()
    {
        closed = true;
        monitor.interrupt();
        for (Peer peer : peers) {
            if (peer != null) {
                try {
                    peer.link.send(RankLink.SHUTDOWN, 0, b -> {});
                }
                catch (IOException ignored) {
                    // a rank whose link is gone has stopped already
                }
                peer.link.close();
            }
        }
        closeQuietly(server);
        if (shared != null) {
            shared.close();
        }
        for (Peer peer : peers) {
            if (peer != null && peer.process.isPresent()) {
                Process process = peer.process.get();
                try {
                    if (!process.waitFor(5, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                    }
                }
                catch (InterruptedException e) {
                    process.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    static String hostName()
    {
        try {
            return InetAddress.getLocalHost().getHostName();
        }
        catch (IOException e) {
            return "localhost";
        }
    }

    static void closeQuietly(AutoCloseable closeable)
    {
        try {
            closeable.close();
        }
        catch (Exception ignored) {
            // nothing to do about a failed close
        }
    }

    /** The leader's view of one rank: its link, a reader thread that files its pieces, and when it was last heard. */
    private final class Peer
    {
        final int rank;
        final long pid;
        final String host;
        final RankLink link;
        final Optional<Process> process;
        final BlockingQueue<ByteBuffer> pieces = new LinkedBlockingQueue<>();
        final Thread reader;
        final boolean local;
        volatile long lastHeard = System.nanoTime();

        Peer(int rank, long pid, String host, RankLink link, Optional<Process> process, boolean local)
        {
            this.local = local;
            this.rank = rank;
            this.pid = pid;
            this.host = host;
            this.link = link;
            this.process = process;
            this.reader = Thread.ofPlatform().daemon().name("handoff-rank-" + rank + "-reader").unstarted(this::read);
        }

        private void read()
        {
            try {
                while (true) {
                    RankLink.Frame frame = link.receive();
                    lastHeard = System.nanoTime();
                    switch (frame.type()) {
                        case RankLink.HEARTBEAT -> {}
                        case RankLink.PIECES -> pieces.add(frame.payload());
                        case RankLink.REFUSED -> {
                            lose(rank, "it failed: " + RankLink.string(frame.payload()), null);
                            return;
                        }
                        default -> {
                            lose(rank, "it sent an unexpected frame of type " + frame.type(), null);
                            return;
                        }
                    }
                }
            }
            catch (IOException e) {
                if (!closed) {
                    lose(rank, "its link closed (" + e.getMessage() + ")", e);
                }
            }
        }
    }
}
