package io.handoff.dist;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A strict reader of the Prometheus text exposition format, for tests: every line is a {@code # HELP} or
 * {@code # TYPE} comment or a sample {@code name{label="value",...} number}; every sample belongs to a
 * family declared by a TYPE line before it. Returns the samples by series ({@code name{labels}}).
 */
final class PrometheusFormat
{
    private static final String NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
    private static final Pattern SAMPLE = Pattern.compile(
            "(" + NAME + ")(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\",?)*})? (-?[0-9.]+(?:[eE][+-]?[0-9]+)?|NaN|[+-]Inf)");
    private static final Pattern HELP = Pattern.compile("# HELP (" + NAME + ") .+");
    private static final Pattern TYPE = Pattern.compile("# TYPE (" + NAME + ") (counter|gauge|histogram|summary|untyped)");

    private PrometheusFormat() {}

    static Map<String, Double> parse(String text)
    {
        Map<String, Double> samples = new HashMap<>();
        Map<String, String> types = new HashMap<>();
        Set<String> helped = new HashSet<>();
        assertThat(text).as("the exposition ends with a newline").endsWith("\n");
        for (String line : text.split("\n")) {
            Matcher help = HELP.matcher(line);
            Matcher type = TYPE.matcher(line);
            if (help.matches()) {
                assertThat(helped.add(help.group(1))).as("one HELP line per family: %s", line).isTrue();
                continue;
            }
            if (type.matches()) {
                assertThat(types.put(type.group(1), type.group(2))).as("one TYPE line per family: %s", line).isNull();
                continue;
            }
            Matcher sample = SAMPLE.matcher(line);
            assertThat(sample.matches()).as("neither a HELP/TYPE comment nor a sample: '%s'", line).isTrue();
            String name = sample.group(1);
            String family = types.containsKey(name) ? name : name.replaceAll("_(bucket|sum|count)$", "");
            assertThat(types).as("a TYPE line before sample '%s'", line).containsKey(family);
            if (!family.equals(name)) {
                assertThat(types.get(family)).as(line).isIn("histogram", "summary");
            }
            String value = sample.group(3);
            double number = switch (value) {
                case "+Inf" -> Double.POSITIVE_INFINITY;
                case "-Inf" -> Double.NEGATIVE_INFINITY;
                default -> Double.parseDouble(value);
            };
            String series = name + (sample.group(2) == null ? "" : sample.group(2));
            assertThat(samples.put(series, number)).as("series %s appears once", series).isNull();
        }
        return samples;
    }
}
