package io.handoff.http.base;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class ProcessMetricsTest
{
    @Test
    void thisProcessReportsWhatItHoldsUnderTheNamesASoakSamples()
    {
        PrometheusText out = new PrometheusText();
        ProcessMetrics.render(out);
        Map<String, Double> values = new HashMap<>();
        for (String line : out.toString().split("\n")) {
            if (!line.startsWith("#")) {
                String[] parts = line.split(" ");
                values.put(parts[0], Double.parseDouble(parts[1]));
            }
        }
        assertThat(values.get(ProcessMetrics.THREADS)).isGreaterThanOrEqualTo(1);
        assertThat(values.get(ProcessMetrics.HEAP_AFTER_GC_BYTES)).isPositive();
        assertThat(values.get(ProcessMetrics.OFF_HEAP_BYTES)).isNotNegative();
        // Linux, where the project runs: resident memory and descriptors are there too
        assertThat(values.get(ProcessMetrics.RESIDENT_BYTES)).isGreaterThan(1 << 20);
        assertThat(values.get(ProcessMetrics.OPEN_FDS)).isGreaterThanOrEqualTo(3);
    }
}
