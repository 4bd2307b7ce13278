package io.handoff.router.planner;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The SLO planner's decisions ({@code handoff.router.planner = slo}), from what it observes and nothing else, so that a
 * recorded load trace gives the same decisions every time. At each look:
 *
 * <ol>
 * <li>TTFT over target while ITL is within it: prompts wait for prefill, and decodes have room, so a decode should become
 * a prefill; ITL over target while TTFT is within it: the other way round. Both within target, both over (no side has
 * room), or no traffic: hold.
 * <li>A switch happens only after {@code hysteresis} looks in a row wanted the same one, at least {@code cooldown} after
 * the last switch, while no server is out (a switch still under way, an unhealthy server), and never takes a side below
 * one routable server.
 * <li>The server switched is the least loaded of the side that gives one up (fewest waiting and running requests).
 * </ol>
 *
 * Every look's decision and its reason are kept (the latest {@value #KEPT}) for {@code GET /debug/planner}. Not thread-safe:
 * one planner thread looks.
 */
public final class SloPlanner
{
    static final int KEPT = 100;

    private enum Want
    {
        HOLD,
        MORE_PREFILL,
        MORE_DECODE
    }

    private final Duration ttftTarget;
    private final Duration itlTarget;
    private final int hysteresis;
    private final long cooldownNanos;
    private final Deque<Decision> decisions = new ArrayDeque<>();
    private Want streakOf = Want.HOLD;
    private int streak;
    private long lastSwitchNanos;
    private boolean switched;

    public SloPlanner(Duration ttftTarget, Duration itlTarget, int hysteresis, Duration cooldown)
    {
        this.ttftTarget = requireNonNull(ttftTarget, "ttftTarget is null");
        this.itlTarget = requireNonNull(itlTarget, "itlTarget is null");
        if (hysteresis < 1) {
            throw new IllegalArgumentException("hysteresis must be at least 1, was " + hysteresis);
        }
        this.hysteresis = hysteresis;
        this.cooldownNanos = requireNonNull(cooldown, "cooldown is null").toNanos();
    }

    /** Decides on {@code observation}, keeps the decision, and returns it. */
    public Decision look(Observation observation)
    {
        Decision decision = decide(observation);
        decisions.addLast(decision);
        while (decisions.size() > KEPT) {
            decisions.removeFirst();
        }
        return decision;
    }

    /** The latest decisions, oldest first. */
    public List<Decision> decisions()
    {
        return List.copyOf(decisions);
    }

    private Decision decide(Observation o)
    {
        long now = o.nanos();
        if (o.ttftP90Seconds().isEmpty() || o.itlP90Seconds().isEmpty()) {
            streak = 0;
            return Decision.hold(now, "no traffic measured in the window");
        }
        double ttft = o.ttftP90Seconds().get();
        double itl = o.itlP90Seconds().get();
        boolean ttftMiss = ttft > seconds(ttftTarget);
        boolean itlMiss = itl > seconds(itlTarget);
        String measured = String.format(Locale.ROOT, "TTFT p90 %.3f s (target %.3f), ITL p90 %.4f s (target %.4f)", ttft, seconds(ttftTarget), itl,
                seconds(itlTarget));
        Want want = ttftMiss == itlMiss ? Want.HOLD : ttftMiss ? Want.MORE_PREFILL : Want.MORE_DECODE;
        if (want == Want.HOLD) {
            streak = 0;
            return Decision.hold(now, measured + (ttftMiss ? ": both over target, no side has room to give" : ": both within target"));
        }
        streak = want == streakOf ? streak + 1 : 1;
        streakOf = want;
        boolean toPrefill = want == Want.MORE_PREFILL;
        String side = toPrefill ? "decode" : "prefill";
        String why = measured + (toPrefill ? ": prompts wait, decodes have room" : ": tokens lag, prefills have room");
        List<Observation.Server> donors = o.servers().stream().filter(server -> server.prefill() != toPrefill && server.routable()).toList();
        if (o.servers().stream().anyMatch(server -> !server.routable())) {
            return Decision.hold(now, why + "; but a server is out (switching, draining or unhealthy): wait for it");
        }
        if (donors.size() < 2) {
            return Decision.hold(now, why + "; but only " + donors.size() + " " + side + " is routable and each role keeps one");
        }
        if (streak < hysteresis) {
            return Decision.hold(now, why + "; " + streak + " of " + hysteresis + " looks in a row (handoff.router.planner-hysteresis)");
        }
        if (switched && now - lastSwitchNanos < cooldownNanos) {
            return Decision.hold(now, why + "; the last switch was " + (now - lastSwitchNanos) / 1_000_000 + " ms ago, under the cooldown of "
                    + cooldownNanos / 1_000_000 + " ms (handoff.router.planner-cooldown)");
        }
        Observation.Server donor = donors.stream().min(Comparator.comparingInt(Observation.Server::load).thenComparing(Observation.Server::id))
                .orElseThrow();
        streak = 0;
        switched = true;
        lastSwitchNanos = now;
        String role = toPrefill ? "prefill" : "decode";
        return new Decision(now, Optional.of(new Decision.Switch(donor.id(), role)), why + "; switching " + side + " " + donor.id() + " (load "
                + donor.load() + ", the least of its side) to " + role);
    }

    private static double seconds(Duration duration)
    {
        return duration.toNanos() / 1e9;
    }
}
