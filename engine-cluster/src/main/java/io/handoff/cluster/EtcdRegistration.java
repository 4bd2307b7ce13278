package io.handoff.cluster;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

import static java.util.Objects.requireNonNull;

/**
 * A member's key under the etcd prefix, attached to a lease that a daemon thread keeps alive every third of its TTL.
 * When etcd no longer has the lease (it expired during a partition, or etcd lost its data) a new lease is granted and
 * the key put again, with the same incarnation: the process did not restart; a key deleted while its lease lives is
 * put back. While etcd cannot be reached the thread logs once and retries every {@code retry-interval}.
 */
final class EtcdRegistration
        implements Registration
{
    private static final Logger log = LogManager.getLogger(EtcdRegistration.class);

    private final ClusterConfig.Etcd config;
    private final EtcdClient client;
    private final String key;
    private final Instant registeredAt = Instant.now();
    private final Thread keeper;
    /** Serialises the writes of the keeper thread and of {@link #draining()}; guards the fields below. */
    private final Object lock = new Object();
    private Member self;
    private long lease;
    /** The record changed (draining) or was not put yet under the current lease. */
    private boolean dirty = true;
    private final AtomicBoolean stopping = new AtomicBoolean();
    private volatile boolean stopped;
    private String outage;
    /** The first put, at start, took the key. */
    private boolean claimed;
    /** Another process holds the key: the record waits (dirty) until the key is free. */
    private boolean displaced;

    private EtcdRegistration(ClusterConfig.Etcd config, EtcdClient client, Member self)
    {
        this.config = requireNonNull(config, "config is null");
        this.client = requireNonNull(client, "client is null");
        this.self = requireNonNull(self, "self is null");
        this.key = config.prefix() + self.id();
        this.keeper = Thread.ofPlatform().daemon().name("handoff-etcd-lease-" + self.id()).unstarted(this::keepAlive);
    }

    /**
     * Registers {@code self} and keeps the registration alive until closed.
     *
     * @throws IOException when no endpoint could grant the lease and put the key (the message names every endpoint and
     *         what each answered)
     */
    static Registration start(ClusterConfig.Etcd config, Member self)
            throws IOException, InterruptedException
    {
        EtcdClient client = new EtcdClient(config);
        EtcdRegistration registration = new EtcdRegistration(config, client, self);
        try {
            client.atStart("cannot register " + self.id() + " in etcd yet", () -> {
                synchronized (registration.lock) {
                    registration.register();
                }
                return null;
            });
        }
        catch (IOException | InterruptedException | RuntimeException e) {
            client.close();
            throw e;
        }
        log.info("registered {} {} (incarnation {}) in etcd {} as {} with lease {} of {}", self.role().label(), self.id(), self.incarnation(),
                config.endpoints(), registration.key, Long.toHexString(registration.lease), config.leaseTtl());
        registration.keeper.start();
        return registration;
    }

    @Override
    public void draining()
    {
        synchronized (lock) {
            self = self.asDraining();
            dirty = true;
            try {
                put();
            }
            catch (IOException e) {
                log.warn("could not mark {} draining in etcd now ({}); the lease thread retries", self.id(), e.getMessage());
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** For the server's startup line: where it is registered. */
    @Override
    public String toString()
    {
        return "etcd " + config.endpoints() + " as " + key;
    }

    @Override
    public void close()
    {
        if (!stop()) {
            return;
        }
        long revoked;
        synchronized (lock) {
            revoked = lease;
        }
        try {
            client.revoke(revoked);
            log.info("deregistered {} from etcd (lease {} revoked)", self.id(), Long.toHexString(revoked));
        }
        catch (IOException e) {
            log.warn("could not revoke lease {} of {} in etcd ({}); its key goes when the lease expires, within {}", Long.toHexString(revoked), self.id(),
                    e.getMessage(), config.leaseTtl());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        finally {
            client.close();
        }
    }

    /** Stops keeping the lease alive without revoking it, as a killed process would (tests: lease expiry). */
    void abandon()
    {
        if (stop()) {
            client.close();
        }
    }

    /** The lease the key is attached to now. */
    long lease()
    {
        synchronized (lock) {
            return lease;
        }
    }

    /** Stops the lease thread; false when it was already stopped (closed or abandoned). */
    private boolean stop()
    {
        if (!stopping.compareAndSet(false, true)) {
            return false;
        }
        stopped = true;
        keeper.interrupt();
        try {
            keeper.join(config.requestTimeout().toMillis() * (config.endpoints().size() + 1));
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    private void keepAlive()
    {
        Duration interval = config.leaseTtl().dividedBy(3);
        while (!stopped) {
            Duration wait = interval;
            try {
                synchronized (lock) {
                    if (!client.keepAlive(lease)) {
                        log.warn("etcd no longer has lease {} of {} (it expired while etcd was out of reach, or etcd lost its data); registering again",
                                Long.toHexString(lease), self.id());
                        register();
                        log.info("registered {} again in etcd with lease {}", self.id(), Long.toHexString(lease));
                    }
                    else if (dirty) {
                        put();
                    }
                    else if (!client.exists(key)) {
                        log.warn("the etcd key {} of {} was deleted while its lease lives; putting it again (stop the server to withdraw it)", key, self.id());
                        put();
                    }
                }
                if (outage != null) {
                    log.info("etcd is reachable again; {} is registered", self.id());
                    outage = null;
                }
            }
            catch (IOException e) {
                if (outage == null) {
                    log.warn("cannot keep the etcd registration of {} alive: {}; retrying every {}", self.id(), e.getMessage(), config.retryInterval());
                }
                outage = e.getMessage();
                wait = config.retryInterval();
            }
            catch (InterruptedException e) {
                return;
            }
            try {
                Thread.sleep(wait);
            }
            catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Grants a new lease and puts the record under it (see {@link #put}). Holds {@link #lock}. */
    private void register()
            throws IOException, InterruptedException
    {
        lease = client.grant(config.leaseTtl());
        dirty = true;
        put();
    }

    /**
     * Puts the record under the current lease. At start it takes the key whoever holds it (a restarted process
     * replaces its predecessor at once); later only while the key is absent, under this lease, or this incarnation's:
     * a process that lost its lease must not overwrite a newer incarnation that registered under the same id
     * meanwhile. Holds {@link #lock}.
     */
    private void put()
            throws IOException, InterruptedException
    {
        byte[] record = new MemberRecord(self, registeredAt).toJson();
        if (!claimed) {
            client.put(key, record, lease);
            claimed = true;
            dirty = false;
            return;
        }
        Optional<EtcdClient.KeyValue> held = client.putUnlessHeld(key, record, lease);
        if (held.isPresent()) {
            String holder = holder(held.get());
            if (!holder.equals(self.incarnation())) {
                if (!displaced) {
                    log.error("member id {} is held in etcd by another incarnation ({}): this process was replaced, or two servers share one"
                            + " handoff.cluster.member-id (give each its own); this {} stays unregistered while that key lives", self.id(), holder,
                            self.role().label());
                }
                displaced = true;
                return;
            }
            client.put(key, record, lease);
        }
        if (displaced) {
            log.info("member id {} is free again in etcd; registered", self.id());
        }
        displaced = false;
        dirty = false;
    }

    /** The incarnation the record of {@code kv} names, or a description of a value that is not a record. */
    private String holder(EtcdClient.KeyValue kv)
    {
        try {
            return MemberRecord.parse(self.id(), kv.value()).member().incarnation();
        }
        catch (IllegalArgumentException e) {
            return "a value that is not a member record: " + e.getMessage();
        }
    }
}
