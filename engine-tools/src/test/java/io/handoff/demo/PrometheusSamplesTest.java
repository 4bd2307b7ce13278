package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PrometheusSamplesTest
{
    private static final String TEXT = """
            # HELP handoff_kv_pages KV pages by state.
            # TYPE handoff_kv_pages gauge
            handoff_kv_pages{state="free"} 4000
            handoff_kv_pages{state="owned"} 90
            handoff_kv_pages{state="receiving"} 0
            handoff_kv_pages{state="quarantined"} 6
            # TYPE handoff_running_requests gauge
            handoff_running_requests 0
            # TYPE handoff_http_requests_total counter
            handoff_http_requests_total{route="/generate",code="200"} 64
            handoff_http_requests_total{route="/health",code="200"} 3
            # TYPE odd gauge
            odd{path="a \\"quoted\\" \\\\ back\\nslash",x="1,}"} 2.5e3 1700000000000
            # TYPE handoff_time_to_first_token_seconds histogram
            handoff_time_to_first_token_seconds_bucket{le="0.1"} 3
            handoff_time_to_first_token_seconds_bucket{le="+Inf"} 5
            handoff_time_to_first_token_seconds_sum 1.25
            weird_values{kind="nan"} NaN
            weird_values{kind="inf"} +Inf
            """;

    @Test
    void readsSamplesByNameAndLabels()
    {
        PrometheusSamples samples = PrometheusSamples.parse(TEXT);
        assertThat(samples.value("handoff_kv_pages", Map.of("state", "free"))).hasValue(4000);
        assertThat(samples.value("handoff_kv_pages", Map.of("state", "quarantined"))).hasValue(6);
        assertThat(samples.value("handoff_running_requests")).hasValue(0);
        assertThat(samples.value("handoff_time_to_first_token_seconds_bucket", Map.of("le", "+Inf"))).hasValue(5);
        assertThat(samples.value("handoff_time_to_first_token_seconds_sum")).hasValue(1.25);
    }

    @Test
    void aNameWithoutLabelsSumsItsSeries()
    {
        PrometheusSamples samples = PrometheusSamples.parse(TEXT);
        assertThat(samples.value("handoff_kv_pages")).hasValue(4096);
        assertThat(samples.value("handoff_http_requests_total", Map.of("code", "200"))).hasValue(67);
    }

    @Test
    void aMissingMetricIsEmptyNotZero()
    {
        PrometheusSamples samples = PrometheusSamples.parse(TEXT);
        assertThat(samples.value("handoff_kv_transfer_bytes_total")).isEmpty();
        assertThat(samples.value("handoff_kv_pages", Map.of("state", "lost"))).isEmpty();
    }

    @Test
    void unescapesLabelValuesAndSkipsTimestamps()
    {
        PrometheusSamples.Sample odd = PrometheusSamples.parse(TEXT).samples().stream()
                .filter(sample -> sample.name().equals("odd")).findFirst().orElseThrow();
        assertThat(odd.labels()).containsExactlyInAnyOrderEntriesOf(Map.of("path", "a \"quoted\" \\ back\nslash", "x", "1,}"));
        assertThat(odd.value()).isEqualTo(2500);
    }

    @Test
    void readsSpecialValues()
    {
        PrometheusSamples samples = PrometheusSamples.parse(TEXT);
        assertThat(samples.value("weird_values", Map.of("kind", "nan")).orElseThrow()).isNaN();
        assertThat(samples.value("weird_values", Map.of("kind", "inf"))).hasValue(Double.POSITIVE_INFINITY);
    }

    @Test
    void aLineThatIsNotASampleIsAnErrorNamingIt()
    {
        assertThatThrownBy(() -> PrometheusSamples.parse("# TYPE x gauge\nx 1\n<html>oops</html>\n"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("line 3")
                .hasMessageContaining("<html>oops</html>");
        assertThatThrownBy(() -> PrometheusSamples.parse("x{a=\"1} 2\n")).hasMessageContaining("unterminated label value of 'a'");
        assertThatThrownBy(() -> PrometheusSamples.parse("x twelve\n")).hasMessageContaining("'twelve' is not a number");
    }
}
