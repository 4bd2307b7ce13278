package io.handoff.demo;

import io.handoff.core.kv.PageAccounting;
import io.handoff.core.scheduler.SchedulerStats;
import io.handoff.http.ServerMetrics;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The demo reads what the server writes: its metric names and format are the ones {@link ServerMetrics} renders. */
class ServerMetricsScrapeTest
{
    @Test
    void theDemoReadsTheServersPagesAndLoad()
    {
        // 4096 pages: 4000 free, 90 owned (88 of them by the prefix cache), 6 quarantined.
        SchedulerStats stats = new SchedulerStats(0, 0, new PageAccounting(4096, 4000, 90, 0, 6), 88, 10, 100, 50, 20, 2);
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse(new ServerMetrics().render(stats, 0)));
        assertThat(metrics.idle()).isTrue();
        assertThat(metrics.poolPages()).hasValue(4096);
        assertThat(metrics.freePages()).hasValue(4000);
        assertThat(metrics.prefixCachePages()).hasValue(88);
        assertThat(metrics.leakedPages()).hasValue(8);
    }

    @Test
    void theDemoSeesABusyServer()
    {
        SchedulerStats stats = new SchedulerStats(3, 1, new PageAccounting(64, 40, 24, 0, 0), 8, 10, 100, 50, 20, 2);
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse(new ServerMetrics().render(stats, 4)));
        assertThat(metrics.running()).hasValue(3);
        assertThat(metrics.waiting()).hasValue(1);
        assertThat(metrics.inFlight()).hasValue(4);
        assertThat(metrics.idle()).isFalse();
    }
}
