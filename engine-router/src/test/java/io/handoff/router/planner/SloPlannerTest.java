package io.handoff.router.planner;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** The SLO planner's decisions on recorded load traces: the same trace, the same decisions, with no clock but the trace's. */
class SloPlannerTest
{
    private static final long SECOND = 1_000_000_000L;

    private static SloPlanner planner()
    {
        // TTFT 1 s, ITL 50 ms; 3 looks in a row; 60 s between switches
        return new SloPlanner(Duration.ofSeconds(1), Duration.ofMillis(50), 3, Duration.ofSeconds(60));
    }

    private static Observation.Server prefill(String id, int load)
    {
        return new Observation.Server(id, true, true, load, 0);
    }

    private static Observation.Server decode(String id, int load)
    {
        return new Observation.Server(id, false, true, 0, load);
    }

    private static Observation look(long second, double ttft, double itl, Observation.Server... servers)
    {
        return new Observation(second * SECOND, List.of(servers), Optional.of(ttft), Optional.of(itl));
    }

    /** The switches a trace leads to, as "second: id -> role". */
    private static List<String> switches(SloPlanner planner, List<Observation> trace)
    {
        List<String> out = new ArrayList<>();
        for (Observation observation : trace) {
            Decision decision = planner.look(observation);
            decision.server().ifPresent(change -> out.add(observation.nanos() / SECOND + ": " + change.id() + " -> " + change.role()));
        }
        return out;
    }

    @Test
    void aPromptHeavyPhaseTurnsTheLeastLoadedDecodeIntoAPrefillAfterTheHysteresis()
    {
        SloPlanner planner = planner();
        List<Observation> trace = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            // TTFT 2.5 s over its 1 s target, ITL 20 ms within its 50 ms one: prompts wait
            trace.add(look(s * 5L, 2.5, 0.020, prefill("p1", 9), decode("d1", 4), decode("d2", 1), decode("d3", 3)));
        }
        assertThat(switches(planner, trace)).containsExactly("10: d2 -> prefill");
        List<Decision> decisions = planner.decisions();
        assertThat(decisions.get(0).reason()).contains("1 of 3 looks in a row");
        assertThat(decisions.get(2).reason()).contains("prompts wait, decodes have room").contains("switching decode d2 (load 1, the least of its side) to prefill");
        // the fourth look still wants one, but the cooldown holds it
        assertThat(decisions.get(3).server()).isEmpty();
    }

    @Test
    void aWorkloadThatShiftsFromPromptHeavyToOutputHeavySwitchesOneWayThenBackAfterTheCooldown()
    {
        SloPlanner planner = planner();
        List<Observation> trace = new ArrayList<>();
        long s = 0;
        for (int i = 0; i < 3; i++, s += 5) {
            trace.add(look(s, 3.0, 0.010, prefill("p1", 8), decode("d1", 2), decode("d2", 3)));
        }
        // d1 switched; it comes back as a prefill: within targets for a while
        for (int i = 0; i < 6; i++, s += 5) {
            trace.add(look(s, 0.4, 0.030, prefill("p1", 4), prefill("d1", 4), decode("d2", 5)));
        }
        // then output-heavy: tokens lag while prompts are served at once
        for (int i = 0; i < 12; i++, s += 5) {
            trace.add(look(s, 0.2, 0.200, prefill("p1", 1), prefill("d1", 0), decode("d2", 12)));
        }
        // output-heavy from 45 s: three looks in a row by 55 s, held by the cooldown until 70 s (60 s after the first switch)
        assertThat(switches(planner, trace)).containsExactly("10: d1 -> prefill", "70: d1 -> decode");
        assertThat(switches(planner(), trace)).as("the same trace, the same decisions").containsExactly("10: d1 -> prefill", "70: d1 -> decode");
    }

    @Test
    void eachRoleKeepsOneServerAndNothingMovesWhileAServerIsOutOrBothSidesMiss()
    {
        SloPlanner planner = planner();
        List<Observation> trace = new ArrayList<>();
        for (int s = 0; s < 5; s++) {
            trace.add(look(s, 0.1, 0.5, prefill("p1", 0), decode("d1", 20)));
        }
        for (int s = 5; s < 10; s++) {
            trace.add(look(s, 0.1, 0.5, prefill("p1", 0), prefill("p2", 0), new Observation.Server("d1", false, false, 0, 0), decode("d2", 9)));
        }
        for (int s = 10; s < 15; s++) {
            trace.add(look(s, 5.0, 0.5, prefill("p1", 3), prefill("p2", 3), decode("d2", 9)));
        }
        assertThat(switches(planner, trace)).isEmpty();
        List<Decision> decisions = planner.decisions();
        assertThat(decisions.get(4).reason()).contains("only 1 prefill is routable and each role keeps one");
        assertThat(decisions.get(9).reason()).contains("a server is out");
        assertThat(decisions.get(14).reason()).contains("both over target");
    }

    @Test
    void withoutTrafficItHolds()
    {
        SloPlanner planner = planner();
        Decision decision = planner.look(new Observation(0, List.of(prefill("p1", 0), decode("d1", 0), decode("d2", 0)), Optional.empty(),
                Optional.empty()));
        assertThat(decision.server()).isEmpty();
        assertThat(decision.reason()).isEqualTo("no traffic measured in the window");
    }
}
