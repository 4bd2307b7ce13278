package io.handoff.bench.report;

import java.util.List;

/** A {@link Report} as one self-contained HTML page: title, machine, notes, charts (inline SVG), tables. */
final class HtmlPage
{
    private HtmlPage() {}

    static String render(Report report, String machine)
    {
        StringBuilder html = new StringBuilder();
        html.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>").append(escape(report.title()))
                .append("</title>\n<style>\nbody{font-family:sans-serif;margin:24px;color:#222;background:#fff}\n"
                        + "h1{font-size:20px}.machine{color:#555;font-size:13px}\n.charts{display:flex;flex-wrap:wrap;gap:16px}\n"
                        + "svg.chart{border:1px solid #ddd}\ntable{border-collapse:collapse;margin:12px 0;font-size:13px}\n"
                        + "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}\n"
                        + "td:first-child,th:first-child{text-align:left}\n</style>\n</head>\n<body>\n");
        html.append("<h1>").append(escape(report.title())).append("</h1>\n");
        html.append("<p class=\"machine\">Measured on ").append(escape(machine)).append(".</p>\n");
        for (String note : report.notes()) {
            html.append("<p>").append(escape(note)).append("</p>\n");
        }
        html.append("<div class=\"charts\">\n");
        for (Chart chart : report.charts()) {
            html.append(SvgChart.render(chart));
        }
        html.append("</div>\n");
        for (Report.Table table : report.tables()) {
            html.append("<h2>").append(escape(table.title())).append("</h2>\n<table>\n<tr>");
            for (String cell : table.header()) {
                html.append("<th>").append(escape(cell)).append("</th>");
            }
            html.append("</tr>\n");
            for (List<String> row : table.rows()) {
                html.append("<tr>");
                for (String cell : row) {
                    html.append("<td>").append(escape(cell)).append("</td>");
                }
                html.append("</tr>\n");
            }
            html.append("</table>\n");
        }
        html.append("</body>\n</html>\n");
        return html.toString();
    }

    static String escape(String text)
    {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }
}
