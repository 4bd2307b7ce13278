package io.handoff.demo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

import static java.util.Objects.requireNonNull;

/**
 * The samples of one scrape of a Prometheus text exposition ({@code GET /metrics}), looked up by metric
 * name and labels. Comments, blank lines and timestamps are skipped; a line that is not a sample is an
 * error naming it, so a server that answers something else is noticed rather than read as zeros.
 */
public final class PrometheusSamples
{
    /** One sample: {@code name{labels} value}. */
    public record Sample(String name, Map<String, String> labels, double value)
    {
        public Sample
        {
            requireNonNull(name, "name is null");
            labels = Map.copyOf(requireNonNull(labels, "labels is null"));
        }
    }

    private final List<Sample> samples;

    private PrometheusSamples(List<Sample> samples)
    {
        this.samples = List.copyOf(samples);
    }

    public static PrometheusSamples parse(String text)
    {
        List<Sample> samples = new ArrayList<>();
        int lineNumber = 0;
        for (String line : text.split("\n")) {
            lineNumber++;
            String trimmed = line.strip();
            if (trimmed.isEmpty() || trimmed.startsWith("#")) {
                continue;
            }
            try {
                samples.add(sample(trimmed));
            }
            catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("not a Prometheus sample at line " + lineNumber + " (" + e.getMessage() + "): '" + line + "'", e);
            }
        }
        return new PrometheusSamples(samples);
    }

    private static Sample sample(String line)
    {
        int nameEnd = 0;
        while (nameEnd < line.length() && isNameChar(line.charAt(nameEnd), nameEnd == 0)) {
            nameEnd++;
        }
        if (nameEnd == 0) {
            throw new IllegalArgumentException("no metric name");
        }
        String name = line.substring(0, nameEnd);
        Map<String, String> labels = new LinkedHashMap<>();
        int position = nameEnd;
        if (position < line.length() && line.charAt(position) == '{') {
            position = labels(line, position + 1, labels);
        }
        String[] rest = line.substring(position).strip().split("\\s+");
        if (rest.length < 1 || rest.length > 2 || rest[0].isEmpty()) {
            throw new IllegalArgumentException("expected a value and an optional timestamp after the name");
        }
        return new Sample(name, labels, number(rest[0]));
    }

    /** Reads {@code key="value",...}} from {@code start}; returns the index after the closing brace. */
    private static int labels(String line, int start, Map<String, String> labels)
    {
        int i = start;
        while (true) {
            while (i < line.length() && (line.charAt(i) == ',' || line.charAt(i) == ' ')) {
                i++;
            }
            if (i < line.length() && line.charAt(i) == '}') {
                return i + 1;
            }
            int keyStart = i;
            while (i < line.length() && isNameChar(line.charAt(i), i == keyStart)) {
                i++;
            }
            if (i == keyStart || i + 1 >= line.length() || line.charAt(i) != '=' || line.charAt(i + 1) != '"') {
                throw new IllegalArgumentException("malformed label at column " + (i + 1));
            }
            String key = line.substring(keyStart, i);
            i += 2;
            StringBuilder value = new StringBuilder();
            while (i < line.length() && line.charAt(i) != '"') {
                char c = line.charAt(i++);
                if (c == '\\' && i < line.length()) {
                    char escaped = line.charAt(i++);
                    value.append(escaped == 'n' ? '\n' : escaped);
                }
                else {
                    value.append(c);
                }
            }
            if (i >= line.length()) {
                throw new IllegalArgumentException("unterminated label value of '" + key + "'");
            }
            labels.put(key, value.toString());
            i++;
        }
    }

    private static boolean isNameChar(char c, boolean first)
    {
        return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
    }

    private static double number(String text)
    {
        return switch (text) {
            case "+Inf", "Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> {
                try {
                    yield Double.parseDouble(text);
                }
                catch (NumberFormatException e) {
                    throw new IllegalArgumentException("'" + text + "' is not a number");
                }
            }
        };
    }

    public List<Sample> samples()
    {
        return samples;
    }

    /** The sum of every series of {@code name} (the value itself for an unlabelled metric); empty when absent. */
    public OptionalDouble value(String name)
    {
        return value(name, Map.of());
    }

    /**
     * The sum over the series of {@code name} whose labels include {@code labels} (all of them, for an
     * empty map); empty when no series matches, so a metric a server does not export is told apart from 0.
     */
    public OptionalDouble value(String name, Map<String, String> labels)
    {
        double sum = 0;
        boolean found = false;
        for (Sample sample : samples) {
            if (sample.name().equals(name) && sample.labels().entrySet().containsAll(labels.entrySet())) {
                sum += sample.value();
                found = true;
            }
        }
        return found ? OptionalDouble.of(sum) : OptionalDouble.empty();
    }
}
