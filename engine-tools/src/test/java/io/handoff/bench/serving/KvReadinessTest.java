package io.handoff.bench.serving;

import io.handoff.inspect.NodeTimeline;
import io.handoff.inspect.NodeTimeline.Entry;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class KvReadinessTest
{
    private static NodeTimeline prefill(Entry... entries)
    {
        return new NodeTimeline("http://127.0.0.1:1", "prefill", "h", 1, "r", 0, true, 0, List.of(entries));
    }

    private static Entry at(String event, long offsetMicros)
    {
        return new Entry(event, 1_000_000 + offsetMicros, offsetMicros, "");
    }

    @Test
    void fromTheLastForwardToTheLastLandedPlan()
    {
        NodeTimeline early = prefill(at("queued", 0), at("forward_done", 100), at("plan_posted", 110), at("plan_landed", 400),
                at("forward_done", 500), at("plan_posted", 505), at("plan_landed", 650), at("aux_sent", 660));

        assertThat(KvReadiness.readyAfterLastForward(early)).hasValue(150);
    }

    @Test
    void onlyTheLastAttemptOfARetriedRequestCounts()
    {
        NodeTimeline retried = prefill(at("queued", 0), at("forward_done", 100), at("plan_landed", 900), at("failed", 950),
                at("queued", 1000), at("forward_done", 1200), at("plan_landed", 1230));

        assertThat(KvReadiness.readyAfterLastForward(retried)).hasValue(30);
    }

    @Test
    void noLandedPlanNoFigure()
    {
        assertThat(KvReadiness.readyAfterLastForward(prefill(at("queued", 0), at("forward_done", 100)))).isEmpty();
    }
}
