package io.handoff.core.fault;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Fault plans from configuration, for end-to-end tests of real processes
 * ({@code handoff.debug.faults = ["transfer-after-page b=2 park"]}). One rule per string:
 * <pre>
 *   POINT [a=N] [b=N] ACTION
 *   POINT:  scheduler-before-step | forward-after-layer | transfer-before-chunk | transfer-after-page | prefill-before-post
 *   ACTION: park | fail | fail=TIMES | delay=DURATION (e.g. delay=200ms)
 * </pre>
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
        for (int i = 1; i < words.length - 1; i++) {
            if (words[i].startsWith("a=")) {
                a = FaultPlan.Match.is(number(rule, words[i].substring(2)));
            }
            else if (words[i].startsWith("b=")) {
                b = FaultPlan.Match.is(number(rule, words[i].substring(2)));
            }
            else {
                throw invalid(rule, "unexpected '" + words[i] + "'");
            }
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
                + " (form: POINT [a=N] [b=N] park|fail|fail=TIMES|delay=DURATION)");
    }
}
