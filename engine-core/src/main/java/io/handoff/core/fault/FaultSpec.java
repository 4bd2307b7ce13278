package io.handoff.core.fault;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Fault plans from configuration, for end-to-end tests of real processes
 * ({@code handoff.debug.faults = ["transfer-after-page b=2 park"]}). One rule per string:
 * <pre>
 *   POINT [a=N | rate=R [seed=N]] [b=N] ACTION
 *   POINT:  scheduler-before-step | forward-after-layer | rank-after-layer | transfer-before-chunk | transfer-after-page | prefill-before-post
 *           | decode-before-verify
 *   ACTION: park | fail | fail=TIMES | delay=DURATION (e.g. delay=200ms) | corrupt | corrupt=TIMES
 * </pre>
 * {@code rate=R seed=N} matches a fraction R (in (0, 1]) of the values of coordinate a (the room, at the transfer
 * and decode points), chosen by a hash of the value and the seed (default 0): {@code "transfer-before-chunk rate=0.05
 * seed=7 fail"} fails about one room in twenty, the same rooms in every process. {@code corrupt} flips one bit of
 * the page a point carries (only {@code decode-before-verify} does: the landed page, before its checksum is checked).
 * A parked point stays parked for the life of the process: such a plan exists to hold a process in a
 * known state while a test kills it or its peer.
 */
public final class FaultSpec
{
    private FaultSpec() {}

    /** The plan for these rules, or {@link FaultInjector#NONE} when there are none. */
    public static FaultInjector parse(List<String> rules)
    {
        if (rules.isEmpty()) {
            return FaultInjector.NONE;
        }
        FaultPlan plan = new FaultPlan();
        for (String rule : rules) {
            add(plan, rule);
        }
        return plan;
    }

    private static void add(FaultPlan plan, String rule)
    {
        String[] words = rule.strip().split("\\s+");
        if (words.length < 2) {
            throw invalid(rule, "expected POINT [a=N] [b=N] ACTION");
        }
        FaultPoint point;
        try {
            point = FaultPoint.valueOf(words[0].toUpperCase(Locale.ROOT).replace('-', '_'));
        }
        catch (IllegalArgumentException e) {
            throw invalid(rule, "unknown point '" + words[0] + "'");
        }
        FaultPlan.Match a = FaultPlan.Match.ANY;
        FaultPlan.Match b = FaultPlan.Match.ANY;
        Long exactA = null;
        Double rate = null;
        Long seed = null;
        for (int i = 1; i < words.length - 1; i++) {
            if (words[i].startsWith("a=")) {
                exactA = number(rule, words[i].substring(2));
            }
            else if (words[i].startsWith("b=")) {
                b = FaultPlan.Match.is(number(rule, words[i].substring(2)));
            }
            else if (words[i].startsWith("rate=")) {
                rate = rate(rule, words[i].substring(5));
            }
            else if (words[i].startsWith("seed=")) {
                seed = number(rule, words[i].substring(5));
            }
            else {
                throw invalid(rule, "unexpected '" + words[i] + "'");
            }
        }
        if (exactA != null && rate != null) {
            throw invalid(rule, "a=N names one value of coordinate a and rate=R a fraction of them; give one of the two");
        }
        if (seed != null && rate == null) {
            throw invalid(rule, "seed=N chooses which values rate=R matches; give rate=R with it");
        }
        if (exactA != null) {
            a = FaultPlan.Match.is(exactA);
        }
        else if (rate != null) {
            a = FaultPlan.Match.sampled(rate, seed == null ? 0 : seed);
        }
        String action = words[words.length - 1];
        if (action.equals("park")) {
            plan.park(point, a, b);
        }
        else if (action.equals("fail")) {
            plan.fail(point, a, b, Integer.MAX_VALUE);
        }
        else if (action.startsWith("fail=")) {
            plan.fail(point, a, b, (int) number(rule, action.substring(5)));
        }
        else if (action.startsWith("delay=")) {
            plan.delay(point, a, b, duration(rule, action.substring(6)));
        }
        else if (action.equals("corrupt") || action.startsWith("corrupt=")) {
            if (!point.carriesBytes()) {
                throw invalid(rule, "'" + words[0] + "' carries no bytes to corrupt; corrupt works at decode-before-verify");
            }
            plan.corrupt(point, a, b, action.equals("corrupt") ? Integer.MAX_VALUE : (int) number(rule, action.substring(8)));
        }
        else {
            throw invalid(rule, "unknown action '" + action + "'");
        }
    }

    private static long number(String rule, String text)
    {
        try {
            return Long.parseLong(text);
        }
        catch (NumberFormatException e) {
            throw invalid(rule, "'" + text + "' is not a number");
        }
    }

    private static double rate(String rule, String text)
    {
        double rate;
        try {
            rate = Double.parseDouble(text);
        }
        catch (NumberFormatException e) {
            throw invalid(rule, "rate '" + text + "' is not a number");
        }
        if (!(rate > 0 && rate <= 1)) {
            throw invalid(rule, "rate " + text + " is not in (0, 1]: it is the fraction of coordinate a's values the rule matches");
        }
        return rate;
    }

    private static Duration duration(String rule, String text)
    {
        try {
            return com.typesafe.config.ConfigFactory.parseString("d = " + text).getDuration("d");
        }
        catch (RuntimeException e) {
            throw invalid(rule, "'" + text + "' is not a duration");
        }
    }

    private static IllegalArgumentException invalid(String rule, String problem)
    {
        return new IllegalArgumentException("handoff.debug.faults: '" + rule + "': " + problem
                + " (form: POINT [a=N | rate=R [seed=N]] [b=N] park|fail|fail=TIMES|delay=DURATION|corrupt|corrupt=TIMES)");
    }
}
