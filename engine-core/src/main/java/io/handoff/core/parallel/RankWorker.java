package io.handoff.core.parallel;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.parallel.Collective;
import io.handoff.core.model.parallel.Pieces;
import io.handoff.core.model.parallel.RankLostException;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterRole;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.security.Session;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Rank 1 or higher of a tensor-parallel group: it connects to the leader, proves itself with the cluster secret when
 * there is one, says which rank it is and what it serves, and then runs every step the leader sends, sending its pieces
 * of each collective and taking the whole back. It stops when the leader says so or its link closes.
 */
public final class RankWorker
        implements Collective, AutoCloseable
{
    private static final Logger log = LogManager.getLogger(RankWorker.class);
    private static final int HEARTBEAT_MILLIS = 1000;

    private final RankLink link;
    private final TensorShard shard;
    private final int pages;
    private final Optional<Path> poolFile;
    private final Duration heartbeatTimeout;
    private float[] scratch = new float[0];
    private SharedExchange shared;
    private ProcessHandle leaderProcess;
    private long leaderCheckedAt;
    private volatile boolean stopped;
    private boolean closed;

    private RankWorker(RankLink link, TensorShard shard, int pages, Optional<Path> poolFile, Duration heartbeatTimeout)
    {
        this.link = link;
        this.shard = shard;
        this.pages = pages;
        this.poolFile = poolFile;
        this.heartbeatTimeout = heartbeatTimeout;
    }

    /** Joins the group at {@code leader} (host:port) as {@code rank}; {@code identity} names its model and KV layout. */
    public static RankWorker join(String leader, int rank, String identity, ClusterSecurity security, Duration timeout, Duration heartbeatTimeout,
            long maxFrameBytes)
            throws IOException
    {
        requireNonNull(leader, "leader is null");
        int colon = leader.lastIndexOf(':');
        if (colon < 1) {
            throw new IllegalArgumentException("--leader '" + leader + "' is not HOST:PORT");
        }
        int port = Integer.parseInt(leader.substring(colon + 1));
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress(leader.substring(0, colon), port), (int) timeout.toMillis());
        socket.setSoTimeout((int) timeout.toMillis());
        Optional<Session> session = Optional.empty();
        if (security.authenticates()) {
            session = Optional.of(ClusterHandshake.initiate(socket, security.secret().orElseThrow(), "tensor-parallel", ClusterRole.RANK_WORKER,
                    ClusterRole.RANK_LEADER, security.handshakeTimeout()));
        }
        RankLink link = new RankLink(socket, session, maxFrameBytes);
        byte[] host = RankLink.utf8(RankGroup.hostName());
        byte[] id = RankLink.utf8(identity);
        link.send(RankLink.HELLO, 12 + host.length + id.length, b -> b.putInt(rank).putLong(ProcessHandle.current().pid()).put(host).put(id));
        ByteBuffer welcome = link.expect(RankLink.WELCOME).payload();
        int size = welcome.getInt();
        int pages = welcome.getInt();
        String poolFile = RankLink.string(welcome);
        if (pages < 1) {
            link.close();
            throw new IOException("the leader's KV pool of " + pages + " pages is not a pool");
        }
        return new RankWorker(link, new TensorShard(rank, size), pages, poolFile.isEmpty() ? Optional.empty() : Optional.of(Path.of(poolFile)),
                heartbeatTimeout);
    }

    @Override
    public TensorShard shard()
    {
        return shard;
    }

    /** The leader's KV pool size: this rank's pool has the same pages, so that every slot a step names exists here. */
    public int pages()
    {
        return pages;
    }

    /**
     * The file the leader created for every rank's KV pool, when a transfer backend must reach them all (prefill and decode
     * servers): this rank maps its own slice of it. A path from the network: check it before opening it. Empty when this
     * rank allocates its pool in its own memory.
     */
    public Optional<Path> poolFile()
    {
        return poolFile;
    }

    /** Tells the leader this rank could not start, and why. */
    public void refuse(String reason)
    {
        try {
            link.send(RankLink.REFUSED, RankLink.utf8(reason));
        }
        catch (IOException e) {
            log.warn("could not tell the leader why this rank stops: {}", e.getMessage());
        }
        close();
    }

    /** Runs the leader's steps until it says stop (returns) or the link fails (throws). */
    public void serve(StepRunner runner, int slots)
            throws IOException
    {
        ready();
        Thread heartbeat = Thread.ofPlatform().daemon().name("handoff-rank-heartbeat").start(this::heartbeat);
        try {
            while (true) {
                RankLink.Frame frame = nextFrame();
                if (frame.type() == RankLink.SHUTDOWN) {
                    return;
                }
                if (frame.type() != RankLink.PLAN) {
                    throw new IOException("expected a step plan, got frame type " + frame.type());
                }
                StepCodec.Step step = StepCodec.read(frame.payload(), slots, shard.size());
                runner.run(step.batch(), step.logitRows());
            }
        }
        finally {
            stopped = true;
            heartbeat.interrupt();
        }
    }

    /** Tells the leader this rank is ready and learns how the group exchanges: the first thing after joining. */
    public void ready()
            throws IOException
    {
        link.send(RankLink.READY, 0, b -> {});
        ByteBuffer sharing = link.expect(RankLink.SHARED).payload();
        long leaderPid = sharing.getLong();
        String path = RankLink.string(sharing);
        if (!path.isEmpty()) {
            leaderProcess = ProcessHandle.of(leaderPid).orElseThrow(() -> new IOException("the leader's process " + leaderPid + " is not on this host"));
            shared = SharedExchange.open(Path.of(path), shard.size(), shard.rank());
        }
        link.setReadTimeout((int) heartbeatTimeout.toMillis());
    }

    /** Waits for the leader to end the group (a rank that ran a fixed sequence, such as a benchmark's). */
    public void awaitShutdown()
            throws IOException
    {
        while (nextFrame().type() != RankLink.SHUTDOWN) {
            // anything else the leader sends before the end is of no use now
        }
    }

    private RankLink.Frame nextFrame()
            throws IOException
    {
        while (true) {
            RankLink.Frame frame = link.receive();
            if (frame.type() != RankLink.HEARTBEAT) {
                return frame;
            }
        }
    }

    private void heartbeat()
    {
        while (!stopped) {
            try {
                link.send(RankLink.HEARTBEAT, 0, b -> {});
                Thread.sleep(HEARTBEAT_MILLIS);
            }
            catch (IOException | InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public void allGather(float[] buf, Pieces pieces)
    {
        if (shared != null && shared.fits(pieces)) {
            exchange(buf, pieces, true);
            return;
        }
        send(buf, pieces);
        try {
            RankLink.Frame frame = nextFrame();
            if (frame.type() != RankLink.GATHERED) {
                throw new IOException("expected gathered values, got frame type " + frame.type());
            }
            ByteBuffer payload = frame.payload();
            int total = 0;
            for (int r = 0; r < shard.size(); r++) {
                total += pieces.floats(r);
            }
            if (payload.remaining() != 4 * total) {
                throw new IOException("the leader sent " + payload.remaining() / 4 + " gathered values where the step needs " + total);
            }
            scratch = Floats.scratch(scratch, total);
            for (int r = 0; r < shard.size(); r++) {
                if (r == shard.rank()) {
                    payload.position(payload.position() + 4 * pieces.floats(r));
                }
                else {
                    Floats.take(payload, pieces, r, buf, scratch);
                }
            }
        }
        catch (IOException e) {
            throw new RankLostException(0, "the link to the leader failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void gather(float[] buf, Pieces pieces)
    {
        if (shared != null && shared.fits(pieces)) {
            exchange(buf, pieces, false);
            return;
        }
        send(buf, pieces);
    }

    private void exchange(float[] buf, Pieces pieces, boolean readOthers)
    {
        try {
            shared.exchange(buf, pieces, readOthers, (rank, nanos) -> leaderAlive());
        }
        catch (SharedExchange.GroupFailedException e) {
            throw new RankLostException(0, "the leader failed the group or exited", e);
        }
    }

    /** Whether the leader's process still runs, looked at no more than every 10 ms. */
    private boolean leaderAlive()
    {
        long now = System.nanoTime();
        if (now - leaderCheckedAt < 10_000_000L) {
            return true;
        }
        leaderCheckedAt = now;
        return leaderProcess.isAlive();
    }

    private void send(float[] buf, Pieces pieces)
    {
        int n = pieces.floats(shard.rank());
        scratch = Floats.scratch(scratch, n);
        float[] values = scratch;
        try {
            link.send(RankLink.PIECES, 4 * n, b -> Floats.put(b, pieces, shard.rank(), buf, values));
        }
        catch (IOException e) {
            throw new RankLostException(0, "the link to the leader failed: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close()
    {
        if (closed) {
            return;
        }
        closed = true;
        stopped = true;
        link.close();
        if (shared != null) {
            shared.close();
        }
    }

    /** Runs one step of this rank's part of the model. */
    @FunctionalInterface
    public interface StepRunner
    {
        void run(ForwardBatch batch, int[] logitRows);
    }
}
