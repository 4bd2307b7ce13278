package io.handoff.bench.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Draws a {@link Chart} as one inline SVG element: axes with ticks, one polyline (and its points) per series, a dashed
 * line per reference, and a legend. Colours come from a fixed palette in order, series first, so that a reader (and the
 * rendering test) can tell them apart.
 */
final class SvgChart
{
    /** Series and reference colours, in order; distinct enough to be told apart on a screenshot. */
    static final List<String> PALETTE = List.of("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2");

    static final int WIDTH = 720;
    static final int HEIGHT = 400;
    private static final int LEFT = 70;
    private static final int RIGHT = 190;
    private static final int TOP = 36;
    private static final int BOTTOM = 50;

    private SvgChart() {}

    /** The colour of the i-th drawn item (series, then references). */
    static String colour(int index)
    {
        return PALETTE.get(index % PALETTE.size());
    }

    static String render(Chart chart)
    {
        List<Chart.Series> series = chart.seriesList();
        List<Chart.Reference> references = chart.references();
        double xMin = Double.POSITIVE_INFINITY;
        double xMax = Double.NEGATIVE_INFINITY;
        double yMax = 0;
        double yMin = 0;
        for (Chart.Series s : series) {
            for (int i = 0; i < s.x().length; i++) {
                if (!Double.isFinite(s.x()[i]) || !Double.isFinite(s.y()[i]) || (chart.isLogX() && s.x()[i] <= 0)) {
                    continue;
                }
                xMin = Math.min(xMin, s.x()[i]);
                xMax = Math.max(xMax, s.x()[i]);
                yMax = Math.max(yMax, s.y()[i]);
                yMin = Math.min(yMin, s.y()[i]);
            }
        }
        for (Chart.Reference r : references) {
            if (Double.isFinite(r.y())) {
                yMax = Math.max(yMax, r.y());
                yMin = Math.min(yMin, r.y());
            }
        }
        if (xMin > xMax) {
            xMin = chart.isLogX() ? 1 : 0;
            xMax = chart.isLogX() ? 10 : 1;
        }
        if (xMin == xMax) {
            xMin = chart.isLogX() ? xMin / 2 : xMin - 1;
            xMax = chart.isLogX() ? xMax * 2 : xMax + 1;
        }
        double yTop = niceCeiling(yMax == yMin ? yMin + 1 : yMax);
        Axis x = new Axis(xMin, xMax, chart.isLogX(), LEFT, WIDTH - RIGHT);
        Axis y = new Axis(yMin, yTop, false, HEIGHT - BOTTOM, TOP);

        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">%n", WIDTH, HEIGHT, WIDTH, HEIGHT, HtmlPage.escape(chart.title())));
        svg.append(String.format(Locale.ROOT, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>%n", WIDTH, HEIGHT));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>%n", LEFT,
                HtmlPage.escape(chart.title())));
        // grid and ticks
        for (double tick : y.ticks()) {
            double py = y.map(tick);
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>%n",
                    LEFT, py, WIDTH - RIGHT, py, LEFT - 6, py + 4, label(tick)));
        }
        for (double tick : x.ticks()) {
            double px = x.map(tick);
            svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e6e6e6\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>%n",
                    px, TOP, px, HEIGHT - BOTTOM, px, HEIGHT - BOTTOM + 16, chart.isLogX() ? binaryLabel(tick) : label(tick)));
        }
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
                + "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n",
                LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM, LEFT, TOP, LEFT, HEIGHT - BOTTOM));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>%n",
                (LEFT + WIDTH - RIGHT) / 2, HEIGHT - 12, HtmlPage.escape(chart.xLabel())));
        svg.append(String.format(Locale.ROOT, "<text x=\"16\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">%s</text>%n",
                (TOP + HEIGHT - BOTTOM) / 2, (TOP + HEIGHT - BOTTOM) / 2, HtmlPage.escape(chart.yLabel())));

        int item = 0;
        List<String> legend = new ArrayList<>();
        for (Chart.Series s : series) {
            String colour = colour(item++);
            StringBuilder points = new StringBuilder();
            StringBuilder dots = new StringBuilder();
            Integer[] order = sortedByX(s);
            for (int i : order) {
                double vx = s.x()[i];
                double vy = s.y()[i];
                if (!Double.isFinite(vx) || !Double.isFinite(vy) || (chart.isLogX() && vx <= 0)) {
                    continue;
                }
                double px = x.map(vx);
                double py = y.map(vy);
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", px, py));
                dots.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %s, %s</title></circle>",
                        px, py, colour, HtmlPage.escape(s.name()), label(vx), label(vy)));
            }
            svg.append(String.format(Locale.ROOT, "<g class=\"series\" data-name=\"%s\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"%s\"/>%s</g>%n",
                    HtmlPage.escape(s.name()), colour, points.toString().trim(), dots));
            legend.add(legendEntry(legend.size(), colour, false, s.name()));
        }
        for (Chart.Reference r : references) {
            String colour = colour(item++);
            if (!Double.isFinite(r.y())) {
                continue;
            }
            double py = y.map(r.y());
            svg.append(String.format(Locale.ROOT, "<g class=\"reference\" data-name=\"%s\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                    + "stroke-width=\"2.5\" stroke-dasharray=\"8 5\"><title>%s: %s</title></line></g>%n",
                    HtmlPage.escape(r.name()), LEFT, py, WIDTH - RIGHT, py, colour, HtmlPage.escape(r.name()), label(r.y())));
            legend.add(legendEntry(legend.size(), colour, true, r.name()));
        }
        legend.forEach(svg::append);
        svg.append("</svg>\n");
        return svg.toString();
    }

    private static String legendEntry(int row, String colour, boolean dashed, String name)
    {
        int top = TOP + 8 + row * 20;
        int left = WIDTH - RIGHT + 14;
        return String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2.5\"%s/>"
                + "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>%n", left, top, left + 24, top, colour,
                dashed ? " stroke-dasharray=\"8 5\"" : "", left + 30, top + 4, HtmlPage.escape(name));
    }

    private static Integer[] sortedByX(Chart.Series s)
    {
        Integer[] order = new Integer[s.x().length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (a, b) -> Double.compare(s.x()[a], s.x()[b]));
        return order;
    }

    /** A number as a tick label: 1.5K, 64K, 4M for large values, up to three significant digits otherwise. */
    static String label(double value)
    {
        double magnitude = Math.abs(value);
        if (magnitude >= 1e9) {
            return trim(value / 1e9) + "G";
        }
        if (magnitude >= 1e6) {
            return trim(value / 1e6) + "M";
        }
        if (magnitude >= 1e4) {
            return trim(value / 1e3) + "K";
        }
        return trim(value);
    }

    /** A power-of-two tick of a log axis (sizes, lengths): 512, 4K, 64K, 1M, 2G. */
    static String binaryLabel(double value)
    {
        String[] units = {"", "K", "M", "G", "T"};
        int unit = 0;
        while (Math.abs(value) >= 1024 && unit < units.length - 1 && value % 1024 == 0) {
            value /= 1024;
            unit++;
        }
        return trim(value) + units[unit];
    }

    private static String trim(double value)
    {
        String text = String.format(Locale.ROOT, "%.3g", value);
        if (text.contains("e")) {
            return text;
        }
        if (text.contains(".")) {
            text = text.replaceAll("0+$", "").replaceAll("\\.$", "");
        }
        return text;
    }

    private static double niceCeiling(double value)
    {
        if (value <= 0) {
            return 1;
        }
        double step = Math.pow(10, Math.floor(Math.log10(value)));
        for (double factor : new double[] {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
            if (factor * step >= value * 1.05) {
                return factor * step;
            }
        }
        return 10 * step;
    }

    /** Maps values to pixels, linearly or by log10. */
    private record Axis(double min, double max, boolean log, double from, double to)
    {
        double map(double value)
        {
            double position = log ? (Math.log10(value) - Math.log10(min)) / (Math.log10(max) - Math.log10(min)) : (value - min) / (max - min);
            return from + position * (to - from);
        }

        List<Double> ticks()
        {
            List<Double> ticks = new ArrayList<>();
            if (log) {
                double first = Math.pow(2, Math.ceil(Math.log(min) / Math.log(2)));
                int count = (int) Math.floor(Math.log(max / first) / Math.log(2)) + 1;
                int every = Math.max(1, (count + 7) / 8);
                for (int i = 0; i < count; i += every) {
                    ticks.add(first * Math.pow(2, i));
                }
                return ticks;
            }
            double span = max - min;
            double step = Math.pow(10, Math.floor(Math.log10(span / 5)));
            for (double factor : new double[] {1, 2, 2.5, 5, 10}) {
                if (span / (factor * step) <= 6) {
                    step = factor * step;
                    break;
                }
            }
            for (double tick = Math.ceil(min / step) * step; tick <= max + step * 1e-9; tick += step) {
                ticks.add(Math.abs(tick) < step * 1e-9 ? 0 : tick);
            }
            return ticks;
        }
    }
}
