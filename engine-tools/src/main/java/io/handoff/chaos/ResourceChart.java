package io.handoff.chaos;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The soak's resource samples as an SVG chart (written by {@code handoff chaos --out DIR}): one panel per figure (resident
 * memory, heap after collection, threads, open file descriptors, quarantined pages), one line per process, time along.
 */
final class ResourceChart
{
    private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    private static final int WIDTH = 720;
    private static final int PANEL = 150;
    private static final int LEFT = 70;
    private static final int TOP = 30;

    private record Figure(String title, ToLongFunction<ResourceSample> value, double scale, String unit) {}

    private static final List<Figure> FIGURES = List.of(
            new Figure("resident memory", ResourceSample::rssBytes, 1 << 20, "MiB"),
            new Figure("heap in use after collection", ResourceSample::heapUsedBytes, 1 << 20, "MiB"),
            new Figure("threads", ResourceSample::threads, 1, ""),
            new Figure("open file descriptors", ResourceSample::fds, 1, ""),
            new Figure("quarantined KV pages", ResourceSample::quarantinedPages, 1, ""));

    private ResourceChart() {}

    static String svg(Map<String, List<ResourceSample>> resources)
    {
        double end = 1;
        for (List<ResourceSample> samples : resources.values()) {
            for (ResourceSample sample : samples) {
                end = Math.max(end, sample.seconds());
            }
        }
        int height = TOP + FIGURES.size() * (PANEL + 40) + 20;
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                + "font-size=\"11\">%n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>%n", WIDTH, height));
        int legend = LEFT;
        int color = 0;
        for (String process : resources.keySet()) {
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"16\" fill=\"%s\">%s</text>%n", legend, COLORS[color++ % COLORS.length],
                    escape(process)));
            legend += 12 + 7 * process.length();
        }
        for (int f = 0; f < FIGURES.size(); f++) {
            Figure figure = FIGURES.get(f);
            int top = TOP + f * (PANEL + 40) + 20;
            double max = 1;
            for (List<ResourceSample> samples : resources.values()) {
                for (ResourceSample sample : samples) {
                    max = Math.max(max, figure.value().applyAsLong(sample) / figure.scale());
                }
            }
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s (max %.1f%s; %.0f s)</text>%n", LEFT, top - 6, figure.title(), max,
                    figure.unit().isEmpty() ? "" : " " + figure.unit(), end));
            svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>%n", LEFT, top,
                    WIDTH - LEFT - 10, PANEL));
            color = 0;
            for (List<ResourceSample> samples : resources.values()) {
                StringBuilder points = new StringBuilder();
                for (ResourceSample sample : samples) {
                    long value = figure.value().applyAsLong(sample);
                    if (value < 0) {
                        continue;
                    }
                    double x = LEFT + (WIDTH - LEFT - 10) * sample.seconds() / end;
                    double y = top + PANEL - PANEL * (value / figure.scale()) / max;
                    points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
                }
                svg.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" points=\"%s\"/>%n", COLORS[color++ % COLORS.length],
                        points.toString().strip()));
            }
        }
        return svg.append("</svg>\n").toString();
    }

    private static String escape(String text)
    {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
