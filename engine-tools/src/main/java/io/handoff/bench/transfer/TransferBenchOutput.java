package io.handoff.bench.transfer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.bench.report.Chart;
import io.handoff.bench.report.Report;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * How {@code bench transfer} prints what it measured: one JSON object (the first page size's figures at the top, and
 * with several page sizes a {@code sweep} of all), a table for people, and the report with its chart.
 */
final class TransferBenchOutput
{
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final List<TransferFigures> figures;
    private final List<TransferFigures> chartOnly;

    /**
     * @param figures the page sizes asked for, in order
     * @param chartOnly further page sizes measured only for the report's chart
     */
    TransferBenchOutput(List<TransferFigures> figures, List<TransferFigures> chartOnly)
    {
        if (figures.isEmpty()) {
            throw new IllegalArgumentException("nothing was measured");
        }
        this.figures = List.copyOf(figures);
        this.chartOnly = List.copyOf(chartOnly);
    }

    ObjectNode json()
    {
        ObjectNode json = MAPPER.createObjectNode();
        figures.getFirst().write(json);
        if (figures.size() > 1) {
            ArrayNode sweep = json.putArray("sweep");
            figures.forEach(one -> one.write(sweep.addObject()));
        }
        return json;
    }

    String jsonText()
            throws JsonProcessingException
    {
        return MAPPER.writeValueAsString(json());
    }

    void printText(PrintWriter out)
    {
        TransferFigures first = figures.getFirst();
        out.printf("bench transfer: %s over %s, %s per round, %d layers (%d regions), %s, %d rounds after a warm-up; bytes verified%n",
                first.backend(), first.transport(), ByteSize.format(first.shape().bytes()), first.shape().layers(), first.shape().regions(),
                (first.scatter() ? "scattered destination pages" : "contiguous pages") + (first.shape().sliced() ? String.format(
                        ", head slices of %d tensor-parallel rank(s) to %d (%d KV heads, %d-token pages; memcpy copies the same slices)",
                        first.shape().senderRanks(), first.shape().receiverRanks(), PayloadShape.KV_HEADS, PayloadShape.PAGE_TOKENS) : ""),
                first.gbps().length);
        out.printf("%10s %8s %8s %8s %10s %9s %12s %9s %6s %10s%n", "page", "GB/s", "min", "max", "memcpy", "vs memcpy", "ucx_perftest",
                "vs ucx", "plans", "plan bytes");
        for (TransferFigures one : figures) {
            double[] sorted = one.gbps().clone();
            java.util.Arrays.sort(sorted);
            out.printf("%10s %8.2f %8.2f %8.2f %10.2f %9.2f %12s %9s %6d %10s%n", ByteSize.format(one.shape().pageBytes()), one.median(), sorted[0],
                    sorted[sorted.length - 1], one.memcpyMedian(), one.ratioMemcpy(),
                    one.ucxPerftest().gbps() == null ? "-" : String.format("%.2f", one.ucxPerftest().gbps()),
                    one.ratioUcxPerftest() == null ? "-" : String.format("%.2f", one.ratioUcxPerftest()), one.plans(), ByteSize.format(one.planBytes()));
        }
        if (first.ucxPerftest().gbps() == null) {
            out.println("ucx_perftest: " + first.ucxPerftest().reason());
        }
        out.println("GB/s: 10^9 bytes per second, median of the rounds; memcpy: one thread copying the same pages in the same order, "
                + "its rounds interleaved with the backend's.");
    }

    Report report()
    {
        List<TransferFigures> all = new ArrayList<>(figures);
        all.addAll(chartOnly);
        all.sort(Comparator.comparingLong(one -> one.shape().pageBytes()));
        TransferFigures first = figures.getFirst();
        double[] x = all.stream().mapToDouble(one -> one.shape().pageBytes() / 1024.0).toArray();
        Chart chart = Chart.line("Bandwidth vs page size: " + first.backend() + " over " + first.transport(), "page bytes per region (KiB)", "GB/s")
                .logX()
                .series(first.backend() + " (" + first.transport() + ")", x, all.stream().mapToDouble(TransferFigures::median).toArray())
                .series("memcpy, same pages, 1 thread", x, all.stream().mapToDouble(TransferFigures::memcpyMedian).toArray());
        List<TransferFigures> withUcx = all.stream().filter(one -> one.ucxPerftest().gbps() != null).toList();
        if (!withUcx.isEmpty()) {
            chart.series("ucx_perftest put", withUcx.stream().mapToDouble(one -> one.shape().pageBytes() / 1024.0).toArray(),
                    withUcx.stream().mapToDouble(one -> one.ucxPerftest().gbps()).toArray());
        }
        List<List<String>> rows = new ArrayList<>();
        for (TransferFigures one : all) {
            rows.add(List.of(ByteSize.format(one.shape().pageBytes()), String.format("%.2f", one.median()),
                    String.format("%.2f", java.util.Arrays.stream(one.gbps()).min().orElseThrow()),
                    String.format("%.2f", java.util.Arrays.stream(one.gbps()).max().orElseThrow()), String.format("%.2f", one.memcpyMedian()),
                    String.format("%.2f", one.ratioMemcpy()),
                    one.ucxPerftest().gbps() == null ? "-" : String.format("%.2f", one.ucxPerftest().gbps()),
                    one.ratioUcxPerftest() == null ? "-" : String.format("%.2f", one.ratioUcxPerftest()),
                    Integer.toString(one.plans()), ByteSize.format(one.planBytes())));
        }
        ObjectNode result = json();
        if (!chartOnly.isEmpty()) {
            ArrayNode chartSweep = result.putArray("chart_sweep");
            all.forEach(one -> one.write(chartSweep.addObject()));
        }
        return new Report("handoff bench transfer: " + first.backend() + " over " + first.transport())
                .result(result)
                .note(String.format("%s per round in %d regions (%d layers, K and V), %s, %d timed rounds after a warm-up, moved between two processes "
                                + "and verified. memcpy: one thread copying the same pages in the same order in the sending process, its rounds "
                                + "interleaved with the backend's.%s", ByteSize.format(first.shape().bytes()), first.shape().regions(),
                        first.shape().layers(), first.scatter() ? "scattered destination pages" : "contiguous pages", first.gbps().length,
                        first.ucxPerftest().gbps() == null ? " ucx_perftest: " + first.ucxPerftest().reason() + "." : ""))
                .chart(chart)
                .table("All figures (GB/s)", List.of("page", "GB/s median", "min", "max", "memcpy", "vs memcpy", "ucx_perftest", "vs ucx_perftest",
                        "plans", "plan bytes"), rows);
    }
}
