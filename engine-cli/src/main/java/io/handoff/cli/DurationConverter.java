package io.handoff.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one syntax of a duration on the command line: a whole number with a unit, {@code 500ms}, {@code 30s}, {@code 2m},
 * {@code 1h}; the unit is required, so no option guesses whether {@code 120} meant seconds or milliseconds.
 */
public final class DurationConverter
        implements ITypeConverter<Duration>
{
    private static final Pattern SYNTAX = Pattern.compile("(\\d{1,12})(ms|s|m|h)");

    @Override
    public Duration convert(String text)
    {
        return parse(text);
    }

    public static Duration parse(String text)
    {
        Matcher matcher = SYNTAX.matcher(text.strip().toLowerCase(Locale.ROOT));
        if (!matcher.matches()) {
            throw new TypeConversionException("'" + text + "' is not a duration: write a whole number with a unit, e.g. 500ms, 30s, 2m or 1h");
        }
        long n = Long.parseLong(matcher.group(1));
        return switch (matcher.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofSeconds(n);
        };
    }

    /** {@code duration} when it is longer than zero; else what {@code option} needs, as a usage error's message. */
    public static Duration positive(String option, Duration duration)
    {
        if (duration.isZero() || duration.isNegative()) {
            throw new IllegalArgumentException(option + " must be longer than 0, got " + duration.toMillis() + "ms");
        }
        return duration;
    }
}
