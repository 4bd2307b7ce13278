package io.handoff.bench.report;

import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One line chart of a benchmark report: measured series (points joined in x order) and horizontal reference lines
 * (a reference measured in the same run, drawn dashed). Build it with {@link #line}, then add series and references.
 */
public final class Chart
{
    /** One measured curve; {@code x} and {@code y} have the same length. */
    public record Series(String name, double[] x, double[] y)
    {
        public Series
        {
            requireNonNull(name, "name is null");
            requireNonNull(x, "x is null");
            requireNonNull(y, "y is null");
            if (x.length != y.length) {
                throw new IllegalArgumentException("series '" + name + "' has " + x.length + " x values and " + y.length + " y values");
            }
            x = x.clone();
            y = y.clone();
        }
    }

    /** A horizontal line at {@code y}: a reference that does not depend on x. */
    public record Reference(String name, double y)
    {
        public Reference
        {
            requireNonNull(name, "name is null");
        }
    }

    private final String title;
    private final String xLabel;
    private final String yLabel;
    private boolean logX;
    private final List<Series> series = new ArrayList<>();
    private final List<Reference> references = new ArrayList<>();

    private Chart(String title, String xLabel, String yLabel)
    {
        this.title = requireNonNull(title, "title is null");
        this.xLabel = requireNonNull(xLabel, "xLabel is null");
        this.yLabel = requireNonNull(yLabel, "yLabel is null");
    }

    public static Chart line(String title, String xLabel, String yLabel)
    {
        return new Chart(title, xLabel, yLabel);
    }

    /** Spaces x logarithmically (page sizes, sequence lengths); every x must then be positive. */
    public Chart logX()
    {
        this.logX = true;
        return this;
    }

    public Chart series(String name, double[] x, double[] y)
    {
        series.add(new Series(name, x, y));
        return this;
    }

    public Chart series(String name, List<? extends Number> x, List<? extends Number> y)
    {
        return series(name, x.stream().mapToDouble(Number::doubleValue).toArray(), y.stream().mapToDouble(Number::doubleValue).toArray());
    }

    public Chart reference(String name, double y)
    {
        references.add(new Reference(name, y));
        return this;
    }

    public String title()
    {
        return title;
    }

    public String xLabel()
    {
        return xLabel;
    }

    public String yLabel()
    {
        return yLabel;
    }

    public boolean isLogX()
    {
        return logX;
    }

    public List<Series> seriesList()
    {
        return List.copyOf(series);
    }

    public List<Reference> references()
    {
        return List.copyOf(references);
    }
}
