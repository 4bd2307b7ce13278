package io.handoff.cluster;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * The members registered under an etcd prefix: read once, then followed with a watch; every put or delete hands over
 * a new whole view. A member whose lease has less than half its TTL left (polled every quarter of the configured TTL)
 * is handed over as draining, so routers stop sending it work before etcd deletes its key. While etcd cannot be
 * reached the last view is handed over marked stale and keeps serving; once etcd answers again the prefix is read
 * afresh (the watch may have missed deletes, or been compacted). A key whose value is not a valid member record is
 * left out, with one warning per value.
 */
final class EtcdMembership
        implements Membership
{
    private static final Logger log = LogManager.getLogger(EtcdMembership.class);

    private final ClusterConfig.Etcd config;
    private final Object lock = new Object();
    private final Map<String, Entry> entries = new TreeMap<>();
    private final Map<String, Long> warned = new HashMap<>();
    private Set<Long> expiring = Set.of();
    private Optional<String> stale = Optional.empty();
    private MembershipView published;
    private EtcdWatch watch;
    private volatile MembershipView current = MembershipView.of(List.of());
    private volatile boolean closed;
    private EtcdClient client;
    private Consumer<MembershipView> listener;
    private ExecutorService listenerThread;
    private volatile Thread listenerOwner;
    private Thread watcher;
    private Thread poller;

    /** A listed member and the lease its key is attached to (0: none). */
    private record Entry(Member member, long lease) {}

    EtcdMembership(ClusterConfig.Etcd config)
    {
        this.config = requireNonNull(config, "config is null");
    }

    @Override
    public void start(Consumer<MembershipView> listener)
            throws IOException, InterruptedException
    {
        requireNonNull(listener, "listener is null");
        if (client != null) {
            throw new IllegalStateException("etcd membership already started");
        }
        this.listener = listener;
        this.client = new EtcdClient(config);
        EtcdClient.Range range;
        try {
            range = client.atStart("cannot read the membership under " + config.prefix() + " from etcd yet", () -> client.range(config.prefix()));
        }
        catch (IOException e) {
            // The client's message names every endpoint and what each answered.
            client.close();
            throw e;
        }
        listenerThread = Executors.newSingleThreadExecutor(runnable -> {
            listenerOwner = Thread.ofPlatform().daemon().name("handoff-etcd-membership-listener").unstarted(runnable);
            return listenerOwner;
        });
        synchronized (lock) {
            replace(range);
            publish();
        }
        try {
            listenerThread.submit(() -> {}).get();
        }
        catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        watcher = Thread.ofPlatform().daemon().name("handoff-etcd-membership-watch").start(() -> follow(range.revision()));
        poller = Thread.ofPlatform().daemon().name("handoff-etcd-membership-leases").start(this::pollLeases);
        log.info("following membership under {} in etcd {}: {} members at revision {}", config.prefix(), config.endpoints(), current.members().size(),
                range.revision());
    }

    @Override
    public MembershipView current()
    {
        return current;
    }

    @Override
    public String describe()
    {
        return "etcd " + config.endpoints() + " " + config.prefix();
    }

    @Override
    public void close()
    {
        closed = true;
        synchronized (lock) {
            if (watch != null) {
                watch.close();
            }
        }
        for (Thread thread : new Thread[] {watcher, poller}) {
            if (thread != null) {
                thread.interrupt();
            }
        }
        try {
            for (Thread thread : new Thread[] {watcher, poller}) {
                if (thread != null && thread != Thread.currentThread()) {
                    thread.join(config.requestTimeout().toMillis() * (config.endpoints().size() + 1));
                }
            }
            if (listenerThread != null) {
                synchronized (lock) {
                    listenerThread.shutdown();
                }
                // A view being handed over finishes before close returns, unless close was called from the listener itself.
                if (Thread.currentThread() != listenerOwner) {
                    listenerThread.awaitTermination(5, TimeUnit.SECONDS);
                }
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (client != null) {
            client.close();
        }
    }

    /** Watches from the revision after {@code revision}; on any break, marks the view stale, then reads the prefix again. */
    private void follow(long revision)
    {
        boolean reread = false;
        while (!closed) {
            try {
                if (reread) {
                    EtcdClient.Range range = client.range(config.prefix());
                    synchronized (lock) {
                        if (stale.isPresent()) {
                            log.info("etcd answers again: membership under {} read afresh at revision {} ({} keys)", config.prefix(), range.revision(),
                                    range.kvs().size());
                        }
                        replace(range);
                        publish();
                    }
                    revision = range.revision();
                    reread = false;
                }
                EtcdWatch opened = client.watch(config.prefix(), revision + 1);
                synchronized (lock) {
                    if (closed) {
                        opened.close();
                        return;
                    }
                    watch = opened;
                }
                try (opened) {
                    while (true) {
                        List<EtcdWatch.Event> events = opened.next();
                        synchronized (lock) {
                            events.forEach(this::apply);
                            publish();
                        }
                        revision = opened.revision();
                    }
                }
            }
            catch (EtcdWatch.Compacted e) {
                log.info("{}; reading the membership afresh", e.getMessage());
                reread = true;
            }
            catch (IOException e) {
                if (closed) {
                    return;
                }
                markStale(e.getMessage());
                reread = true;
                if (!pause(config.retryInterval())) {
                    return;
                }
            }
            catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Every quarter TTL: which listed members' leases have less than half their TTL left. */
    private void pollLeases()
    {
        Duration interval = config.leaseTtl().dividedBy(4);
        while (pause(interval)) {
            Set<Long> leases = new HashSet<>();
            synchronized (lock) {
                entries.values().stream().filter(entry -> entry.lease() != 0).forEach(entry -> leases.add(entry.lease()));
            }
            Set<Long> found = new HashSet<>();
            try {
                for (long lease : leases) {
                    EtcdClient.LeaseTtl ttl = client.timeToLive(lease);
                    // The gateway reports whole seconds left: with a 2 s TTL, 1 s left still reads as 1 (not below half).
                    if (ttl.gone() || ttl.remaining() * 2 < ttl.granted()) {
                        found.add(lease);
                    }
                }
                synchronized (lock) {
                    // A stale view is the last one read, kept as it was: leases polled from an etcd whose keys have
                    // not been read afresh yet (one that lost its data, say) say nothing about it.
                    if (stale.isEmpty()) {
                        expiring = found;
                        publish();
                    }
                }
            }
            catch (IOException e) {
                if (closed) {
                    return;
                }
                markStale(e.getMessage());
                // A partition can leave the watch stream silently open: end it, so the watcher reads the prefix afresh.
                synchronized (lock) {
                    if (watch != null) {
                        watch.close();
                    }
                }
            }
            catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Replaces every entry with what {@code range} lists; the view is in touch with etcd again. Holds {@link #lock}. */
    private void replace(EtcdClient.Range range)
    {
        entries.clear();
        Set<String> keys = new HashSet<>();
        for (EtcdClient.KeyValue kv : range.kvs()) {
            put(kv);
            keys.add(kv.key());
        }
        warned.keySet().retainAll(keys);
        stale = Optional.empty();
    }

    /** Holds {@link #lock}. */
    private void apply(EtcdWatch.Event event)
    {
        if (event.delete()) {
            entries.remove(event.kv().key());
            warned.remove(event.kv().key());
        }
        else {
            put(event.kv());
        }
    }

    /** Lists the member {@code kv} describes, or leaves its key out with one warning. Holds {@link #lock}. */
    private void put(EtcdClient.KeyValue kv)
    {
        String id = kv.key().substring(config.prefix().length());
        try {
            entries.put(kv.key(), new Entry(MemberRecord.parse(id, kv.value()).member(), kv.lease()));
            warned.remove(kv.key());
        }
        catch (IllegalArgumentException e) {
            entries.remove(kv.key());
            Long before = warned.put(kv.key(), kv.modRevision());
            if (before == null || before != kv.modRevision()) {
                log.warn("ignoring etcd key {} (revision {}): not a member record: {}; delete or fix the key", EtcdClient.excerpt(kv.key()), kv.modRevision(),
                        e.getMessage());
            }
        }
    }

    /** Hands the last members over again, marked stale for {@code reason}, unless they already are. */
    private void markStale(String reason)
    {
        synchronized (lock) {
            if (stale.isPresent()) {
                return;
            }
            log.warn("etcd membership under {} is stale, the last {} members keep serving: {}; retrying every {}", config.prefix(), entries.size(), reason,
                    config.retryInterval());
            stale = Optional.of(reason);
            publish();
        }
    }

    /** Queues the view the entries make now, unless it is the one last queued. Holds {@link #lock}. */
    private void publish()
    {
        List<Member> members = new ArrayList<>();
        for (Entry entry : entries.values()) {
            members.add(expiring.contains(entry.lease()) ? entry.member().asDraining() : entry.member());
        }
        members.sort(Comparator.comparing(Member::id));
        MembershipView view = new MembershipView(members, stale);
        if (view.equals(published) || closed) {
            return;
        }
        published = view;
        listenerThread.execute(() -> handOver(view));
    }

    private void handOver(MembershipView view)
    {
        if (closed) {
            return;
        }
        current = view;
        try {
            listener.accept(view);
        }
        catch (RuntimeException e) {
            log.error("the membership listener failed on a view of {} members", view.members().size(), e);
        }
    }

    /** Sleeps {@code duration}; false when closed or interrupted meanwhile. */
    private boolean pause(Duration duration)
    {
        try {
            Thread.sleep(duration);
            return !closed;
        }
        catch (InterruptedException e) {
            return false;
        }
    }
}
