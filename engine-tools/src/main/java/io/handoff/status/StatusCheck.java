package io.handoff.status;

import io.handoff.cluster.Member;
import io.handoff.cluster.Membership;
import io.handoff.cluster.MembershipView;
import io.handoff.http.base.security.RouterCredentials;

import java.io.IOException;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/** One status check: the membership read once, then every member asked at once. */
public final class StatusCheck
{
    private final MemberProbe probe;

    /** Asks members through {@code client} with {@code credentials}, each member within {@code timeout}. */
    public StatusCheck(HttpClient client, RouterCredentials credentials, Duration timeout)
    {
        this.probe = new MemberProbe(client, credentials, timeout);
    }

    /**
     * Asks every member of {@code view} at once.
     *
     * @param source where {@code view} was read (a membership source's {@code describe()})
     */
    public ClusterStatus check(String discovery, String source, MembershipView view)
            throws InterruptedException
    {
        List<Member> members = view.members();
        List<MemberStatus> statuses = new ArrayList<>();
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<MemberStatus>> calls = new ArrayList<>();
            for (Member member : members) {
                calls.add(executor.submit(() -> probe.probe(member)));
            }
            for (Future<MemberStatus> call : calls) {
                try {
                    statuses.add(call.get());
                }
                catch (ExecutionException e) {
                    throw new IllegalStateException("asking a member failed: " + e.getCause(), e.getCause());
                }
            }
        }
        return new ClusterStatus(discovery, source, view.stale(), statuses);
    }

    /**
     * {@code membership}'s first view: started with a listener that keeps it, then closed, whatever happened.
     *
     * @param bound how long reading the membership may take before it is given up
     * @throws IOException when the membership could not be read: the message says why, not yet what to check
     */
    public static MembershipView readOnce(Membership membership, Duration bound)
            throws IOException, InterruptedException
    {
        AtomicReference<MembershipView> first = new AtomicReference<>();
        CompletableFuture<Void> started = new CompletableFuture<>();
        // on a thread of its own: a source stuck past the bound is left behind (and closed), not waited for
        Thread starter = Thread.ofVirtual().name("cluster-status-membership").start(() -> {
            try {
                membership.start(view -> first.compareAndSet(null, view));
                started.complete(null);
            }
            catch (Exception e) {
                started.completeExceptionally(e);
            }
        });
        try {
            started.get(bound.toNanos(), TimeUnit.NANOSECONDS);
        }
        catch (TimeoutException e) {
            starter.interrupt();
            throw new IOException("no membership within " + bound.toMillis() + " ms");
        }
        catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            throw new IOException(cause.getMessage() == null ? cause.toString() : cause.getMessage(), cause);
        }
        finally {
            membership.close();
        }
        MembershipView view = first.get();
        if (view == null) {
            throw new IOException("the membership source returned from start without handing over a view");
        }
        return view;
    }
}
