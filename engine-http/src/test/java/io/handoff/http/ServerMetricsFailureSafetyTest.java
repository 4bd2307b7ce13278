package io.handoff.http;

import io.handoff.core.kv.PageAccounting;
import io.handoff.core.kv.QuarantineTimes;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.testing.PrometheusFormat;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The failure-safety lines of {@code /metrics}: failures by every cause, and how long quarantines lasted. */
class ServerMetricsFailureSafetyTest
{
    @Test
    void everyCauseIsListedZeroIncludedAndQuarantinesAreAHistogramAndTheLongest()
    {
        QuarantineTimes times = new QuarantineTimes();
        times.ended(2_000_000); // 2 ms
        times.ended(40_000_000_000L); // 40 s: a stalled prefill
        SchedulerStats stats = new SchedulerStats(0, 0, new PageAccounting(64, 60, 0, 0, 4), 0, 0, 0, 0, 0, 3,
                Map.of(FailureCause.CHECKSUM_MISMATCH, 2L, FailureCause.CLIENT_ABORT, 1L), times.snapshot());

        Map<String, Double> metrics = PrometheusFormat.parse(new ServerMetrics().render(stats, 0));

        for (FailureCause cause : FailureCause.values()) {
            double expected = switch (cause) {
                case CHECKSUM_MISMATCH -> 2;
                case CLIENT_ABORT -> 1;
                default -> 0;
            };
            assertThat(metrics).containsEntry("handoff_request_failures_total{cause=\"" + cause.label() + "\"}", expected);
        }
        assertThat(metrics).containsEntry("handoff_kv_quarantine_seconds_count", 2.0)
                .containsEntry("handoff_kv_quarantine_seconds_bucket{le=\"0.005\"}", 1.0)
                .containsEntry("handoff_kv_quarantine_seconds_bucket{le=\"30\"}", 1.0)
                .containsEntry("handoff_kv_quarantine_seconds_bucket{le=\"60\"}", 2.0)
                .containsEntry("handoff_kv_quarantine_seconds_bucket{le=\"+Inf\"}", 2.0)
                .containsEntry("handoff_kv_quarantine_longest_seconds", 40.0)
                .containsEntry("handoff_kv_pages{state=\"quarantined\"}", 4.0);
        assertThat(metrics.get("handoff_kv_quarantine_seconds_sum")).isCloseTo(40.002, org.assertj.core.data.Offset.offset(1e-9));
    }
}
