package io.handoff.core.parallel;

import io.handoff.core.security.ClusterHandshake;
import io.handoff.core.security.ClusterRole;
import io.handoff.core.security.Session;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * How ranks join a group: rank 0 has the launcher start ranks 1.., accepts connections until each rank has joined or the
 * startup timeout passes, authenticates each (the cluster handshake when there is a secret; loopback only without one),
 * refuses a rank number out of range or taken and a rank that serves another model or KV layout (saying why), welcomes
 * the others with the group's size and pool, and waits until each has loaded its shard. A launched rank that exits
 * first fails the start with its last words.
 */
final class RankAdmission
{
    private static final Logger log = LogManager.getLogger(RankAdmission.class);
    private static final String PURPOSE = "tensor-parallel";

    /** A rank that joined: its link, who it says it is, and its process when this one started it. */
    record Joined(int rank, long pid, String host, RankLink link, Optional<Process> process, boolean local) {}

    private RankAdmission() {}

    /** Every rank 1..size-1, ready, by rank (index 0 empty); on failure every link is closed and every launched rank stopped. */
    static Joined[] admit(RankGroup.Settings settings, ServerSocket server, RankLauncher launcher)
    {
        String leader = settings.host() + ":" + server.getLocalPort();
        Joined[] joined = new Joined[settings.size()];
        List<RankLauncher.Launched> launched = new ArrayList<>();
        try {
            for (int rank = 1; rank < settings.size(); rank++) {
                launcher.launch(rank, leader).ifPresent(launched::add);
            }
            accept(settings, server, leader, launched, joined);
            awaitReady(settings, launched, joined);
            return joined;
        }
        catch (RuntimeException e) {
            for (Joined rank : joined) {
                if (rank != null) {
                    rank.link().close();
                }
            }
            launched.forEach(rank -> rank.process().destroyForcibly());
            throw e;
        }
    }

    private static void accept(RankGroup.Settings settings, ServerSocket server, String leader, List<RankLauncher.Launched> launched, Joined[] joined)
    {
        long deadline = System.nanoTime() + settings.startupTimeout().toNanos();
        int count = 0;
        while (count < settings.size() - 1) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            for (RankLauncher.Launched process : launched) {
                if (!process.process().isAlive() && joined[process.rank()] == null) {
                    throw new IllegalStateException("rank " + process.rank() + " exited with code " + process.process().exitValue()
                            + " before it joined the group" + process.lastWords().map(w -> ": " + w).orElse(""));
                }
            }
            if (left <= 0) {
                throw new IllegalStateException("only " + count + " of " + (settings.size() - 1) + " ranks joined the tensor-parallel group at "
                        + leader + " within " + settings.startupTimeout().toSeconds() + " s (handoff.parallel.startup-timeout)");
            }
            try {
                server.setSoTimeout((int) Math.min(left, 500));
                Socket socket = server.accept();
                Optional<Joined> rank = hello(settings, socket, launched, joined);
                if (rank.isPresent()) {
                    joined[rank.get().rank()] = rank.get();
                    count++;
                }
            }
            catch (SocketTimeoutException e) {
                // look at the launched processes again
            }
            catch (IOException e) {
                throw new IllegalStateException("the tensor-parallel leader stopped accepting ranks: " + e.getMessage(), e);
            }
        }
    }

    /** Authenticates a connection and reads its hello; empty (closed, with the reason logged and sent) if it is refused. */
    private static Optional<Joined> hello(RankGroup.Settings settings, Socket socket, List<RankLauncher.Launched> launched, Joined[] joined)
    {
        RankLink link = null;
        try {
            socket.setSoTimeout((int) settings.startupTimeout().toMillis());
            Optional<Session> session = Optional.empty();
            if (settings.security().authenticates()) {
                session = Optional.of(ClusterHandshake.respond(socket, settings.security().secret().orElseThrow(), PURPOSE, ClusterRole.RANK_LEADER,
                        ClusterRole.RANK_WORKER, settings.security().handshakeTimeout()));
            }
            else if (!socket.getInetAddress().isLoopbackAddress()) {
                throw new IOException("a rank connected from " + socket.getInetAddress().getHostAddress() + " without a cluster secret");
            }
            link = new RankLink(socket, session, settings.maxFrameBytes());
            ByteBuffer hello = link.expect(RankLink.HELLO).payload();
            if (hello.remaining() < 12) {
                throw new IOException("a hello of " + hello.remaining() + " bytes is too short for a rank and a pid");
            }
            int rank = hello.getInt();
            long pid = hello.getLong();
            String host = RankLink.string(hello);
            String identity = RankLink.string(hello);
            String refusal = rank < 1 || rank >= settings.size() ? "rank " + rank + " is not in 1.." + (settings.size() - 1)
                    : joined[rank] != null ? "rank " + rank + " has joined already"
                    : !identity.equals(settings.identity()) ? "its model or KV layout (" + identity + ") is not the leader's (" + settings.identity() + ")"
                    : settings.poolFile().isPresent() && !socket.getInetAddress().isLoopbackAddress()
                            ? "the group's ranks share one KV pool file with their leader, which a transfer backend reads and writes (prefill and "
                                    + "decode servers), so every rank must run on the leader's host and join on loopback; this one joined from "
                                    + socket.getInetAddress().getHostAddress()
                    : null;
            if (refusal != null) {
                link.send(RankLink.REFUSED, RankLink.utf8(refusal));
                throw new IOException(refusal);
            }
            byte[] poolFile = RankLink.utf8(settings.poolFile().map(Path::toString).orElse(""));
            link.send(RankLink.WELCOME, 8 + poolFile.length, b -> b.putInt(settings.size()).putInt(settings.pages()).put(poolFile));
            Optional<Process> process = launched.stream().filter(l -> l.rank() == rank).map(RankLauncher.Launched::process).findFirst();
            return Optional.of(new Joined(rank, pid, host, link, process, socket.getInetAddress().isLoopbackAddress()));
        }
        catch (IOException e) {
            log.warn("refused a rank connection from {}: {}", socket.getRemoteSocketAddress(), e.getMessage());
            if (link != null) {
                link.close();
            }
            else {
                RankGroup.closeQuietly(socket);
            }
            return Optional.empty();
        }
    }

    /** Every rank loads its shard at once; each says when it is ready, or why it cannot start. */
    private static void awaitReady(RankGroup.Settings settings, List<RankLauncher.Launched> launched, Joined[] joined)
    {
        for (int rank = 1; rank < settings.size(); rank++) {
            Joined peer = joined[rank];
            try {
                RankLink.Frame ready = peer.link().receive();
                if (ready.type() == RankLink.REFUSED) {
                    throw new IllegalStateException("rank " + rank + " could not start: " + RankLink.string(ready.payload()));
                }
                if (ready.type() != RankLink.READY) {
                    throw new IllegalStateException("rank " + rank + " sent frame type " + ready.type() + " instead of ready");
                }
                peer.link().setReadTimeout(0);
            }
            catch (IOException e) {
                int r = rank;
                throw new IllegalStateException("rank " + rank + " did not become ready: " + e.getMessage()
                        + launched.stream().filter(l -> l.rank() == r).findFirst().flatMap(RankLauncher.Launched::lastWords)
                                .map(w -> " (its last words: " + w + ")").orElse(""), e);
            }
        }
    }
}
