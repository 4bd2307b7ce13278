package io.handoff.http.base;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class PrometheusTextTest
{
    @Test
    void histogramBucketsAreCumulativeWithInclusiveUpperBoundsAndInfEqualToCount()
    {
        Histogram histogram = new Histogram(new double[] {0.1, 1, 10});
        histogram.observe(0.1);
        histogram.observe(0.5);
        histogram.observe(1);
        histogram.observe(100);

        String text = new PrometheusText().histogram("latency_seconds", "Latency.", histogram.snapshot()).toString();

        assertThat(text).isEqualTo("""
                # HELP latency_seconds Latency.
                # TYPE latency_seconds histogram
                latency_seconds_bucket{le="0.1"} 1
                latency_seconds_bucket{le="1"} 3
                latency_seconds_bucket{le="10"} 3
                latency_seconds_bucket{le="+Inf"} 4
                latency_seconds_sum 101.6
                latency_seconds_count 4
                """);
    }

    @Test
    void labelValuesAndHelpAreEscaped()
    {
        Map<String, String> labels = new LinkedHashMap<>();
        labels.put("route", "a\"b\\c\nd");
        labels.put("code", "200");

        String text = new PrometheusText().family("requests_total", "Line one\nline \\two", "counter")
                .sample("requests_total", labels, 3).toString();

        assertThat(text).isEqualTo("""
                # HELP requests_total Line one\\nline \\\\two
                # TYPE requests_total counter
                requests_total{route="a\\"b\\\\c\\nd",code="200"} 3
                """);
    }

    @Test
    void fractionalAndSpecialValuesUsePrometheusSpelling()
    {
        String text = new PrometheusText().gauge("ratio", "A ratio.", 0.25).gauge("nothing", "NaN.", Double.NaN).toString();

        assertThat(text).contains("ratio 0.25\n", "nothing NaN\n");
    }
}
