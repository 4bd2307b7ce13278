package io.handoff.core.security;

import io.handoff.spi.transfer.TransferContext;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The caps on a listener's connections that have not finished their hello yet, in total and per remote address
 * ({@code handoff.security.max-unauthenticated-connections} and {@code max-unauthenticated-per-address}): a flood from
 * one address, or from many, cannot hold more than that, and a connection beyond a cap is closed on arrival. Each
 * listener (the control port, each backend's data port) has its own. Thread-safe.
 */
public final class ConnectionCaps
{
    private final int total;
    private final int perAddress;
    private final AtomicInteger held = new AtomicInteger();
    private final Map<String, AtomicInteger> byHost = new ConcurrentHashMap<>();

    public ConnectionCaps(int total, int perAddress)
    {
        if (total < 1 || perAddress < 1) {
            throw new IllegalArgumentException("connection caps must be positive: " + total + ", " + perAddress);
        }
        this.total = total;
        this.perAddress = perAddress;
    }

    public static ConnectionCaps of(ClusterSecurity security)
    {
        return new ConnectionCaps(security.maxUnauthenticatedConnections(), security.maxUnauthenticatedPerAddress());
    }

    /**
     * Takes one place for a connection from {@code host}; empty when it fits, else why not (and nothing is taken). The
     * caller gives the place back with {@link #release} once the connection said its hello, or ended.
     */
    public Optional<String> reserve(String host)
    {
        if (held.incrementAndGet() > total) {
            held.decrementAndGet();
            return Optional.of("more than " + total + " connections have not finished their hello (handoff.security.max-unauthenticated-connections)");
        }
        if (byHost.computeIfAbsent(host, h -> new AtomicInteger()).incrementAndGet() > perAddress) {
            release(host);
            return Optional.of("more than " + perAddress + " connections from this address have not finished their hello "
                    + "(handoff.security.max-unauthenticated-per-address)");
        }
        return Optional.empty();
    }

    /**
     * {@link #reserve} as a backend's {@link TransferContext#admit} answers: a place that {@link TransferContext.Admission#close}
     * gives back once, or empty after telling {@code refused} why.
     */
    public Optional<TransferContext.Admission> admit(String host, Consumer<String> refused)
    {
        Optional<String> overCap = reserve(host);
        if (overCap.isPresent()) {
            refused.accept(overCap.get());
            return Optional.empty();
        }
        AtomicBoolean held = new AtomicBoolean(true);
        return Optional.of(() -> {
            if (held.compareAndSet(true, false)) {
                release(host);
            }
        });
    }

    public void release(String host)
    {
        held.decrementAndGet();
        byHost.computeIfPresent(host, (h, count) -> count.decrementAndGet() <= 0 ? null : count);
    }

    /** Places taken now. */
    public int held()
    {
        return held.get();
    }
}
