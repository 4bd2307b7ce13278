package io.handoff.bench.transfer;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Sizes as the bench options take and print them: a whole number with an optional unit B, KiB, MiB or GiB (powers of 1024). */
final class ByteSize
{
    private static final Pattern SIZE = Pattern.compile("(\\d{1,19})\\s*(B|KiB|MiB|GiB|K|M|G)?", Pattern.CASE_INSENSITIVE);

    private ByteSize() {}

    /** @param option the option the text came from, for the message */
    static long parse(String option, String text)
    {
        Matcher matcher = SIZE.matcher(text.strip());
        if (!matcher.matches()) {
            throw new IllegalArgumentException(option + " '" + text + "' is not a size: give bytes, or a number with KiB, MiB or GiB (e.g. 64KiB)");
        }
        long number;
        try {
            number = Long.parseLong(matcher.group(1));
        }
        catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " '" + text + "' is too large", e);
        }
        String unit = matcher.group(2) == null ? "B" : matcher.group(2).toUpperCase(Locale.ROOT);
        int shift = switch (unit.charAt(0)) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            default -> 0;
        };
        if (number > Long.MAX_VALUE >> shift) {
            throw new IllegalArgumentException(option + " '" + text + "' is too large");
        }
        if (number == 0) {
            throw new IllegalArgumentException(option + " '" + text + "' must be positive");
        }
        return number << shift;
    }

    /** The largest unit that divides {@code bytes} exactly: 64KiB, 256MiB, 1000B. */
    static String format(long bytes)
    {
        String[] units = {"GiB", "MiB", "KiB"};
        int[] shifts = {30, 20, 10};
        for (int i = 0; i < units.length; i++) {
            long unit = 1L << shifts[i];
            if (bytes >= unit && bytes % unit == 0) {
                return (bytes >> shifts[i]) + units[i];
            }
        }
        return bytes + "B";
    }
}
