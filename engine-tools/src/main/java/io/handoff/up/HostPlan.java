package io.handoff.up;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * How {@code handoff up} shares one host between its servers: compute threads (the cores split evenly, unless
 * {@code --threads} says) and each KV pool (the configured pool, shrunk to fit half of the memory the host has free
 * after every server's copy of the weights, unless {@code --kv-pool-memory} says), and the sentences that say so.
 *
 * @param threads compute threads of each server
 * @param poolBytes KV pool memory of each server, when the plan sets it (empty: the configured pool stands)
 * @param notes what was chosen and why, for people
 */
public record HostPlan(int threads, OptionalLong poolBytes, List<String> notes)
{
    /** The smallest pool up fits: below it the machine is too small for this many servers, and it says so. */
    static final long MIN_POOL_PAGES = 64;

    public HostPlan
    {
        notes = List.copyOf(notes);
    }

    /**
     * @param servers prefills and decodes (the router computes nothing)
     * @param cores the host's cores
     * @param givenThreads {@code --threads}, 0 when not given
     * @param poolGiven whether {@code --kv-pool-memory} (or the configuration) fixes the pool
     * @param configuredPoolBytes the pool one server gets from its configuration
     * @param bytesPerPage one KV page of this model
     * @param availableMemory the host's free memory (MemAvailable), empty when unknown
     * @param weightBytes one server's copy of the weights (the checkpoint's size; 0 for a seeded preset)
     */
    public static HostPlan of(int servers, int cores, int givenThreads, boolean poolGiven, long configuredPoolBytes, long bytesPerPage,
            OptionalLong availableMemory, long weightBytes)
    {
        if (servers < 1) {
            throw new IllegalArgumentException("servers must be at least 1, got " + servers);
        }
        List<String> notes = new ArrayList<>();
        int threads;
        if (givenThreads > 0) {
            threads = givenThreads;
            notes.add(threads + " compute threads per server (--threads)" + (threads * servers > cores ? "; " + servers + " servers x " + threads
                    + " is more than the " + cores + " cores here, so they will contend" : ""));
        }
        else {
            threads = Math.max(1, cores / servers);
            notes.add(threads + " compute threads per server: " + cores + " cores shared by " + servers + " servers"
                    + (cores < servers ? " (fewer cores than servers: they will contend)" : ""));
        }
        if (poolGiven) {
            notes.add("KV pool " + mib(configuredPoolBytes) + " per server, as configured");
            return new HostPlan(threads, OptionalLong.empty(), notes);
        }
        if (availableMemory.isEmpty()) {
            notes.add("KV pool " + mib(configuredPoolBytes) + " per server, as configured (this host's free memory is unknown)");
            return new HostPlan(threads, OptionalLong.empty(), notes);
        }
        long free = availableMemory.getAsLong();
        long budget = (free / 2 - weightBytes * servers) / servers;
        if (configuredPoolBytes <= budget) {
            notes.add("KV pool " + mib(configuredPoolBytes) + " per server, as configured: " + servers + " of them and " + servers
                    + " copies of the weights fit in half of the " + mib(free) + " free here");
            return new HostPlan(threads, OptionalLong.empty(), notes);
        }
        long floor = MIN_POOL_PAGES * bytesPerPage;
        long pool = Math.max(floor, budget / bytesPerPage * bytesPerPage);
        notes.add("KV pool " + mib(pool) + " per server instead of the configured " + mib(configuredPoolBytes) + ", to fit " + servers
                + " servers and their weights (" + mib(weightBytes) + " each) in half of the " + mib(free) + " free here; set --kv-pool-memory to choose");
        if (pool == floor && budget < floor) {
            notes.add("this host has too little free memory for " + servers + " servers of this model; they may not start (try fewer servers)");
        }
        return new HostPlan(threads, OptionalLong.of(pool), notes);
    }

    static String mib(long bytes)
    {
        return bytes >= 10L << 30 ? (bytes >> 30) + " GiB" : (bytes >> 20) + " MiB";
    }
}
