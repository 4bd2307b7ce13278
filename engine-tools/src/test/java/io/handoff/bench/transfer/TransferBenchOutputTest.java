package io.handoff.bench.transfer;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class TransferBenchOutputTest
{
    @TempDir
    Path temp;

    @Test
    void theJsonHasEveryFigureWithRatiosAgainstTheSameRunsReferences()
    {
        TransferFigures figures = figures(64 << 10, new UcxPerftest.Result(2.0, null));

        JsonNode json = new TransferBenchOutput(List.of(figures), List.of()).json();

        assertThat(json.get("backend").asText()).isEqualTo("nixl");
        assertThat(json.get("transport").asText()).isEqualTo("ucx:tcp");
        assertThat(json.get("bytes").asLong()).isEqualTo(16L << 20);
        assertThat(json.get("page_bytes").asLong()).isEqualTo(64 << 10);
        assertThat(json.get("layers").asInt()).isEqualTo(8);
        assertThat(json.get("scatter").asBoolean()).isTrue();
        assertThat(json.get("rounds").asInt()).isEqualTo(3);
        assertThat(json.get("gbps").get("median").asDouble()).isEqualTo(1.0);
        assertThat(json.get("gbps").get("min").asDouble()).isEqualTo(0.5);
        assertThat(json.get("gbps").get("max").asDouble()).isEqualTo(3.0);
        assertThat(json.get("memcpy_gbps").asDouble()).isEqualTo(4.0);
        assertThat(json.get("round_gbps")).extracting(JsonNode::asDouble).containsExactly(3.0, 0.5, 1.0);
        assertThat(json.get("round_memcpy_gbps")).extracting(JsonNode::asDouble).containsExactly(4.0, 4.0, 5.0);
        assertThat(json.get("ratio_memcpy").asDouble()).isEqualTo(0.25);
        assertThat(json.get("ucx_perftest_gbps").asDouble()).isEqualTo(2.0);
        assertThat(json.get("ratio_ucx_perftest").asDouble()).isEqualTo(0.5);
        assertThat(json.get("plans").asInt()).isEqualTo(1);
        assertThat(json.get("plan_bytes").asLong()).isEqualTo(16L << 20);
        assertThat(json.get("verified").asBoolean()).isTrue();
        assertThat(json.has("sweep")).isFalse();
    }

    @Test
    void withoutUcxPerftestItsFiguresAreNullAndTheReasonSaysWhy()
    {
        JsonNode json = new TransferBenchOutput(List.of(figures(64 << 10, new UcxPerftest.Result(null, "ucx_perftest is not installed"))), List.of())
                .json();

        assertThat(json.get("ucx_perftest_gbps").isNull()).isTrue();
        assertThat(json.get("ratio_ucx_perftest").isNull()).isTrue();
        assertThat(json.get("ucx_perftest_reason").asText()).isEqualTo("ucx_perftest is not installed");
    }

    @Test
    void severalPageSizesKeepTheFirstOnTopAndEveryOneInTheSweep()
    {
        UcxPerftest.Result none = new UcxPerftest.Result(null, "not run");
        JsonNode json = new TransferBenchOutput(List.of(figures(4 << 10, none), figures(1 << 20, none)), List.of()).json();

        assertThat(json.get("page_bytes").asLong()).isEqualTo(4 << 10);
        assertThat(json.get("sweep")).hasSize(2);
        assertThat(json.get("sweep").get(1).get("page_bytes").asLong()).isEqualTo(1 << 20);
    }

    @Test
    void theReportChartsBandwidthAgainstPageSizeWithTheReferencesAndWritesBothFiles()
            throws Exception
    {
        UcxPerftest.Result ucx = new UcxPerftest.Result(2.0, null);
        TransferBenchOutput output = new TransferBenchOutput(List.of(figures(64 << 10, ucx)), List.of(figures(4 << 10, ucx), figures(1 << 20, ucx)));

        var report = output.report();
        report.write(temp);

        assertThat(report.charts()).hasSize(1);
        assertThat(report.charts().getFirst().seriesList()).extracting(series -> series.name())
                .containsExactly("nixl (ucx:tcp)", "memcpy, same pages, 1 thread", "ucx_perftest put");
        assertThat(report.charts().getFirst().seriesList().getFirst().x()).containsExactly(4, 64, 1024);
        assertThat(report.tables().getFirst().rows()).hasSize(3);
        assertThat(Files.readString(temp.resolve("report.html"))).contains("<svg");
        assertThat(Files.readString(temp.resolve("report.json"))).contains("\"chart_sweep\"");
        StringWriter text = new StringWriter();
        output.printText(new PrintWriter(text));
        assertThat(text.toString()).contains("nixl over ucx:tcp").contains("bytes verified");
    }

    private static TransferFigures figures(long pageBytes, UcxPerftest.Result ucx)
    {
        return new TransferFigures("nixl", "ucx:tcp", new PayloadShape(16L << 20, pageBytes, 8), true, new double[] {3.0, 0.5, 1.0},
                new double[] {4.0, 4.0, 5.0}, ucx, pageBytes, 1, 16L << 20);
    }
}
