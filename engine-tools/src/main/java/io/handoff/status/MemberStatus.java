package io.handoff.status;

import io.handoff.cluster.Member;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

import static java.util.Objects.requireNonNull;

/**
 * One member as membership lists it and as it answered {@code handoff cluster status}: {@code GET /health},
 * {@code /bootstrap} and {@code /metrics}. What a member did not answer (or answered in a shape that could not be
 * read) is empty, never a made-up 0.
 *
 * @param member as the membership source lists it
 * @param reason why health is not {@link Health#OK}
 * @param answeredRole the role its {@code /bootstrap} gives
 * @param answeredIncarnation the incarnation its {@code /bootstrap} gives
 * @param suspectPeers a decode's prefills it holds suspect ({@code /health}'s {@code suspect_peers})
 * @param problems what else did not add up: an answer that could not be read, a role or an incarnation that differs
 *         from the membership's
 */
public record MemberStatus(Member member, Health health, Optional<String> reason, Optional<String> answeredRole, Optional<String> answeredIncarnation,
        Optional<String> control, Optional<String> transferBackend, List<String> suspectPeers, Load load, List<String> problems)
{
    /** Whether the member answered, and how. */
    public enum Health
    {
        /** {@code GET /health} answered 200. */
        OK,
        /** It answered, with another status (shutting down, or not ready). */
        UNHEALTHY,
        /** No answer within the timeout, the connection refused, or an answer that is not what a Handoff server sends. */
        UNREACHABLE;

        public String label()
        {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * What the member's {@code /metrics} says of its load.
     *
     * @param running requests admitted by its scheduler ({@code handoff_running_requests})
     * @param waiting requests queued for admission ({@code handoff_waiting_requests})
     * @param kvPagesUsed pages of its KV pool not free
     * @param kvPagesTotal pages in its KV pool ({@code handoff_kv_pool_pages})
     * @param prefixCacheHitRate share of prompt tokens served from its prefix cache since it started, 0 to 1
     */
    public record Load(OptionalInt running, OptionalInt waiting, OptionalInt kvPagesUsed, OptionalInt kvPagesTotal, OptionalDouble prefixCacheHitRate)
    {
        public static final Load UNKNOWN = new Load(OptionalInt.empty(), OptionalInt.empty(), OptionalInt.empty(), OptionalInt.empty(), OptionalDouble.empty());

        public Load
        {
            requireNonNull(running, "running is null");
            requireNonNull(waiting, "waiting is null");
            requireNonNull(kvPagesUsed, "kvPagesUsed is null");
            requireNonNull(kvPagesTotal, "kvPagesTotal is null");
            requireNonNull(prefixCacheHitRate, "prefixCacheHitRate is null");
        }
    }

    public MemberStatus
    {
        requireNonNull(member, "member is null");
        requireNonNull(health, "health is null");
        requireNonNull(reason, "reason is null");
        requireNonNull(answeredRole, "answeredRole is null");
        requireNonNull(answeredIncarnation, "answeredIncarnation is null");
        requireNonNull(control, "control is null");
        requireNonNull(transferBackend, "transferBackend is null");
        suspectPeers = List.copyOf(suspectPeers);
        requireNonNull(load, "load is null");
        problems = List.copyOf(problems);
    }

    /** The incarnation that runs: the one the server gave, else the one membership lists (empty when neither is known). */
    public String incarnation()
    {
        return answeredIncarnation.orElse(member.incarnation());
    }
}
