package io.handoff.bench.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * What {@code handoff bench ... --out DIR} writes: {@code report.json} (the benchmark's own JSON result, as
 * {@code --json} prints it, under {@code "result"}, with the machine it ran on) and {@code report.html}, one
 * self-contained page (no script, no network) with the charts drawn as inline SVG and the tables.
 */
public final class Report
{
    /** A table of the report: a header row and rows of the same width. */
    public record Table(String title, List<String> header, List<List<String>> rows)
    {
        public Table
        {
            requireNonNull(title, "title is null");
            header = List.copyOf(header);
            rows = rows.stream().map(List::copyOf).toList();
            for (List<String> row : rows) {
                if (row.size() != header.size()) {
                    throw new IllegalArgumentException("table '" + title + "': a row of " + row.size() + " cells under " + header.size() + " headers");
                }
            }
        }
    }

    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final String title;
    private final List<Chart> charts = new ArrayList<>();
    private final List<Table> tables = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private JsonNode result = MAPPER.createObjectNode();

    public Report(String title)
    {
        this.title = requireNonNull(title, "title is null");
    }

    /** The benchmark's result, written to report.json as it is. */
    public Report result(JsonNode result)
    {
        this.result = requireNonNull(result, "result is null");
        return this;
    }

    public Report chart(Chart chart)
    {
        charts.add(requireNonNull(chart, "chart is null"));
        return this;
    }

    public Report table(String title, List<String> header, List<List<String>> rows)
    {
        tables.add(new Table(title, header, rows));
        return this;
    }

    /** A sentence under the title: what was measured against what. */
    public Report note(String text)
    {
        notes.add(requireNonNull(text, "text is null"));
        return this;
    }

    public String title()
    {
        return title;
    }

    public List<Chart> charts()
    {
        return List.copyOf(charts);
    }

    public List<Table> tables()
    {
        return List.copyOf(tables);
    }

    public List<String> notes()
    {
        return List.copyOf(notes);
    }

    /** Writes report.json and report.html into {@code directory}, creating it; returns the HTML file. */
    public Path write(Path directory)
            throws IOException
    {
        Files.createDirectories(directory);
        ObjectNode json = MAPPER.createObjectNode();
        json.put("title", title);
        json.set("machine", Machine.describe(MAPPER));
        json.set("result", result);
        Files.writeString(directory.resolve("report.json"), MAPPER.writeValueAsString(json) + "\n", StandardCharsets.UTF_8);
        Path html = directory.resolve("report.html");
        Files.writeString(html, HtmlPage.render(this, Machine.summary()), StandardCharsets.UTF_8);
        return html;
    }
}
