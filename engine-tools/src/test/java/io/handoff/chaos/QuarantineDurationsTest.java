package io.handoff.chaos;

import io.handoff.demo.PrometheusSamples;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class QuarantineDurationsTest
{
    @Test
    void theServersHistogramsAreAddedAndThePercentilesAreTheBucketBoundsTheyFallUnder()
    {
        PrometheusSamples decode = PrometheusSamples.parse("""
                # TYPE handoff_kv_quarantine_seconds histogram
                handoff_kv_quarantine_seconds_bucket{le="0.01"} 60
                handoff_kv_quarantine_seconds_bucket{le="0.1"} 97
                handoff_kv_quarantine_seconds_bucket{le="1"} 99
                handoff_kv_quarantine_seconds_bucket{le="+Inf"} 100
                handoff_kv_quarantine_seconds_sum 3.5
                handoff_kv_quarantine_seconds_count 100
                """);
        PrometheusSamples prefill = PrometheusSamples.parse("""
                # TYPE handoff_kv_quarantine_seconds histogram
                handoff_kv_quarantine_seconds_bucket{le="0.01"} 0
                handoff_kv_quarantine_seconds_bucket{le="0.1"} 0
                handoff_kv_quarantine_seconds_bucket{le="1"} 0
                handoff_kv_quarantine_seconds_bucket{le="+Inf"} 0
                handoff_kv_quarantine_seconds_sum 0
                handoff_kv_quarantine_seconds_count 0
                """);

        QuarantineDurations durations = QuarantineDurations.of(List.of(prefill, decode)).orElseThrow();

        assertThat(durations.count()).isEqualTo(100);
        assertThat(durations.p50Seconds()).hasValue(0.01);
        assertThat(durations.p99Seconds()).hasValue(1.0);
    }

    @Test
    void serversWithoutTheHistogramGiveNothingAndNoQuarantineGivesNoPercentiles()
    {
        assertThat(QuarantineDurations.of(List.of(PrometheusSamples.parse("handoff_running_requests 0\n")))).isEmpty();
        QuarantineDurations none = QuarantineDurations.of(List.of(PrometheusSamples.parse("handoff_kv_quarantine_seconds_bucket{le=\"+Inf\"} 0\n")))
                .orElseThrow();
        assertThat(none.count()).isZero();
        assertThat(none.p50Seconds()).isEmpty();
    }
}
