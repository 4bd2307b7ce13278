package io.handoff.http.base;

import java.util.Locale;
import java.util.Map;

/**
 * Writes the Prometheus text exposition format (version 0.0.4): per family a {@code # HELP} and a
 * {@code # TYPE} line, then samples {@code name{label="value",...} number}. Small enough that a metrics
 * library would add more than it saves.
 */
public final class PrometheusText
{
    public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final StringBuilder out = new StringBuilder();

    public PrometheusText counter(String name, String help, double value)
    {
        family(name, help, "counter");
        sample(name, Map.of(), value);
        return this;
    }

    public PrometheusText gauge(String name, String help, double value)
    {
        family(name, help, "gauge");
        sample(name, Map.of(), value);
        return this;
    }

    /** One family whose samples differ by the value of one label. */
    public PrometheusText labelled(String name, String help, String type, String label, Map<String, ? extends Number> values)
    {
        family(name, help, type);
        values.forEach((key, value) -> sample(name, Map.of(label, key), value.doubleValue()));
        return this;
    }

    public PrometheusText histogram(String name, String help, Histogram.Snapshot histogram)
    {
        family(name, help, "histogram");
        for (int i = 0; i < histogram.upperBounds().length; i++) {
            sample(name + "_bucket", Map.of("le", number(histogram.upperBounds()[i])), histogram.cumulativeCounts()[i]);
        }
        sample(name + "_bucket", Map.of("le", "+Inf"), histogram.count());
        sample(name + "_sum", Map.of(), histogram.sum());
        sample(name + "_count", Map.of(), histogram.count());
        return this;
    }

    public PrometheusText family(String name, String help, String type)
    {
        out.append("# HELP ").append(name).append(' ').append(help.replace("\\", "\\\\").replace("\n", "\\n")).append('\n');
        out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
        return this;
    }

    /** One sample; {@code labels} are written in their iteration order. */
    public PrometheusText sample(String name, Map<String, String> labels, double value)
    {
        out.append(name);
        if (!labels.isEmpty()) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, String> label : labels.entrySet()) {
                out.append(first ? "" : ",").append(label.getKey()).append("=\"")
                        .append(label.getValue().replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")).append('"');
                first = false;
            }
            out.append('}');
        }
        out.append(' ').append(number(value)).append('\n');
        return this;
    }

    private static String number(double value)
    {
        if (Double.isNaN(value)) {
            return "NaN";
        }
        if (Double.isInfinite(value)) {
            return value > 0 ? "+Inf" : "-Inf";
        }
        if (value == Math.rint(value) && Math.abs(value) < 1e15) {
            return Long.toString((long) value);
        }
        return String.format(Locale.ROOT, "%s", value);
    }

    @Override
    public String toString()
    {
        return out.toString();
    }
}
