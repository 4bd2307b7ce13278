package io.handoff.bench.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReportTest
{
    @TempDir
    Path folder;

    @Test
    void writesTheResultAndTheMachineToReportJson()
            throws IOException
    {
        ObjectMapper mapper = new ObjectMapper();
        new Report("transfer").result(mapper.readTree("{\"backend\":\"mori\",\"gbps\":{\"median\":4.5}}")).write(folder);

        JsonNode json = mapper.readTree(folder.resolve("report.json").toFile());
        assertThat(json.path("title").asText()).isEqualTo("transfer");
        assertThat(json.path("result").path("gbps").path("median").asDouble()).isEqualTo(4.5);
        assertThat(json.path("machine").path("cores").asInt()).isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void drawsOnePolylinePerSeriesAndOneDashedLinePerReference()
            throws IOException
    {
        Chart chart = Chart.line("GB/s vs page size", "page bytes", "GB/s").logX()
                .series("mori", new double[] {4096, 65536, 1048576}, new double[] {1, 3, 5})
                .series("memcpy", new double[] {65536, 4096, 1048576}, new double[] {5, 2, 6})
                .reference("ucx_perftest", 4);
        Path html = new Report("transfer").chart(chart).table("figures", List.of("size", "GB/s"), List.of(List.of("64K", "3"))).write(folder);

        String page = Files.readString(html);
        assertThat(page).contains("<svg").doesNotContain("<script");
        assertThat(countOf(page, "<polyline")).isEqualTo(2);
        assertThat(countOf(page, "stroke-dasharray")).isEqualTo(2); // the reference line and its legend entry
        assertThat(page).contains("<td>64K</td>");
    }

    @Test
    void pointsAreJoinedInXOrder()
    {
        String svg = SvgChart.render(Chart.line("t", "x", "y").series("s", new double[] {3, 1, 2}, new double[] {0, 0, 0}));
        String points = svg.substring(svg.indexOf("points=\"") + 8, svg.indexOf('"', svg.indexOf("points=\"") + 8));
        double[] xs = java.util.Arrays.stream(points.split(" ")).mapToDouble(p -> Double.parseDouble(p.split(",")[0])).toArray();
        assertThat(xs).isSorted().hasSize(3);
    }

    @Test
    void escapesWhatItPrints()
            throws IOException
    {
        Path html = new Report("a <b> & \"c\"").note("<script>alert(1)</script>").write(folder);

        String page = Files.readString(html);
        assertThat(page).doesNotContain("<script>").contains("&lt;script&gt;").contains("a &lt;b&gt; &amp; &quot;c&quot;");
    }

    @Test
    void refusesMismatchedShapes()
    {
        assertThatThrownBy(() -> Chart.line("t", "x", "y").series("s", new double[] {1, 2}, new double[] {1}))
                .hasMessageContaining("series 's' has 2 x values and 1 y values");
        assertThatThrownBy(() -> new Report("r").table("t", List.of("a", "b"), List.of(List.of("1"))))
                .hasMessageContaining("a row of 1 cells under 2 headers");
    }

    @Test
    void labelsLargeAndSmallNumbersShortly()
    {
        assertThat(SvgChart.label(65536)).isEqualTo("65.5K");
        assertThat(SvgChart.label(1048576)).isEqualTo("1.05M");
        assertThat(SvgChart.label(0.25)).isEqualTo("0.25");
        assertThat(SvgChart.label(3)).isEqualTo("3");
        assertThat(SvgChart.binaryLabel(4096)).isEqualTo("4K");
        assertThat(SvgChart.binaryLabel(1048576)).isEqualTo("1M");
        assertThat(SvgChart.binaryLabel(512)).isEqualTo("512");
    }

    private static int countOf(String text, String part)
    {
        int count = 0;
        for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
            count++;
        }
        return count;
    }
}
