package io.handoff.http.testing;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A strict reader of the Prometheus text format, for tests: every line is a {@code # HELP}/{@code # TYPE}
 * comment or {@code name{labels} value}; returns the samples by their full series name.
 */
public final class PrometheusFormat
{
    private static final Pattern SAMPLE = Pattern.compile(
            "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\",?)*})? (-?[0-9.eE+-]+|NaN|[+-]Inf)");
    private static final Pattern COMMENT = Pattern.compile("# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) .*");

    private PrometheusFormat() {}

    public static Map<String, Double> parse(String text)
    {
        Map<String, Double> samples = new HashMap<>();
        Map<String, String> types = new HashMap<>();
        assertThat(text).endsWith("\n");
        for (String line : text.split("\n")) {
            Matcher comment = COMMENT.matcher(line);
            if (comment.matches()) {
                if (comment.group(1).equals("TYPE")) {
                    assertThat(line).matches("# TYPE \\S+ (counter|gauge|histogram|summary|untyped)");
                    assertThat(types.put(comment.group(2), line)).as("one TYPE line per family: %s", line).isNull();
                }
                continue;
            }
            Matcher sample = SAMPLE.matcher(line);
            assertThat(sample.matches()).as("neither a comment nor a sample: '%s'", line).isTrue();
            String family = sample.group(1).replaceAll("_(bucket|sum|count)$", "");
            assertThat(types).as("sample %s has a TYPE line before it", line).containsKey(types.containsKey(family) ? family : sample.group(1));
            String value = sample.group(3);
            samples.put(sample.group(1) + (sample.group(2) == null ? "" : sample.group(2)),
                    value.equals("+Inf") ? Double.POSITIVE_INFINITY : value.equals("-Inf") ? Double.NEGATIVE_INFINITY : Double.parseDouble(value));
        }
        return samples;
    }
}
