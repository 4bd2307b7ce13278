package io.handoff.router.planner;

import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What the planner sees at one look: every server with its role and load, and the latencies the decodes measured over
 * their recent requests (the worst decode's p90 of its last 30 s: a request's TTFT on a decode runs from its arrival there
 * to its first token, queueing, prefill and transfer included).
 *
 * @param nanos when the look was taken (a monotonic clock)
 * @param ttftP90Seconds time to first token, empty when no decode saw a request recently
 * @param itlP90Seconds inter-token latency, empty likewise
 */
public record Observation(long nanos, List<Server> servers, Optional<Double> ttftP90Seconds, Optional<Double> itlP90Seconds)
{
    public Observation
    {
        servers = List.copyOf(servers);
        requireNonNull(ttftP90Seconds, "ttftP90Seconds is null");
        requireNonNull(itlP90Seconds, "itlP90Seconds is null");
    }

    /**
     * One server.
     *
     * @param id its member id (what a switch names)
     * @param prefill its role: prefill, else decode
     * @param routable healthy and not draining: it takes requests now (a server switching its role is not)
     * @param waiting requests queued on it for admission
     * @param running requests it runs
     */
    public record Server(String id, boolean prefill, boolean routable, int waiting, int running)
    {
        public Server
        {
            requireNonNull(id, "id is null");
        }

        int load()
        {
            return waiting + running;
        }
    }
}
