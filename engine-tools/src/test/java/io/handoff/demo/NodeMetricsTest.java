package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.util.OptionalDouble;
import java.util.OptionalInt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class NodeMetricsTest
{
    @Test
    void leakedPagesAreNeitherFreeNorHeldByThePrefixCache()
    {
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse("""
                handoff_running_requests 0
                handoff_waiting_requests 0
                handoff_server_inflight_requests 0
                handoff_kv_pages{state="free"} 4000
                handoff_kv_pages{state="owned"} 90
                handoff_kv_pages{state="receiving"} 0
                handoff_kv_pages{state="quarantined"} 6
                handoff_kv_pool_pages 4096
                handoff_prefix_cache_pages 88
                """));
        assertThat(metrics.idle()).isTrue();
        // 2 owned by no request and 6 quarantined
        assertThat(metrics.leakedPages()).hasValue(8);
        assertThat(metrics.transferBytes()).isEmpty();
    }

    @Test
    void withoutThePoolTotalTheStatesAddUpToIt()
    {
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse("""
                handoff_kv_pages{state="free"} 10
                handoff_kv_pages{state="owned"} 6
                handoff_prefix_cache_pages 6
                """));
        assertThat(metrics.poolPages()).hasValue(16);
        assertThat(metrics.leakedPages()).hasValue(0);
    }

    @Test
    void aServerThatDoesNotExportPagesCannotTellItsLeak()
    {
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse("handoff_running_requests 2\n"));
        assertThat(metrics.leakedPages()).isEmpty();
        assertThat(metrics.idle()).isFalse();
    }

    @Test
    void readsTheTransferCountersOfAPrefill()
    {
        NodeMetrics metrics = NodeMetrics.from(PrometheusSamples.parse("""
                handoff_kv_transfer_bytes_total 3.2e9
                handoff_kv_transfer_busy_seconds_total 0.8
                """));
        assertThat(metrics.transferBytes()).hasValue(3.2e9);
        assertThat(metrics.transferBusySeconds()).hasValue(0.8);
        ServerFigures figures = new ServerFigures(metrics.transferBytes(), metrics.transferBusySeconds(), OptionalInt.of(0), OptionalInt.of(0),
                BootstrapInfo.UNKNOWN);
        assertThat(figures.transferGbps().orElseThrow()).isCloseTo(4.0, within(1e-12));
    }

    @Test
    void noBusyTimeNoRate()
    {
        ServerFigures idle = new ServerFigures(OptionalDouble.of(0), OptionalDouble.of(0), OptionalInt.empty(), OptionalInt.empty(),
                BootstrapInfo.UNKNOWN);
        assertThat(idle.transferGbps()).isEmpty();
        assertThat(ServerFigures.UNKNOWN.transferGbps()).isEmpty();
    }
}
