package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks the user's configuration against the reference. The reference is the schema: a key's type is
 * its reference value's type, and the comment above a key may narrow it with one of
 * <pre>
 *   # allowed: 1..256              (an inclusive numeric range)
 *   # allowed: auto | on | off     (one of these strings)
 *   # type: duration               (or: bytes)
 *   # free-form                    (an object whose keys are not checked)
 *   # secret                       (never printed: errors and handoff config show {@code <redacted>})
 * </pre>
 * so each key is documented and constrained in one place, its module's {@code reference.conf}.
 */
final class ConfigValidator
{
    private static final Pattern RANGE = Pattern.compile("allowed:\\s*(-?[0-9.]+)\\s*\\.\\.\\s*(-?[0-9.]+)\\s*");
    private static final Pattern CHOICES = Pattern.compile("allowed:\\s*([^|]+(?:\\|[^|]+)+)");
    private static final Pattern TYPE = Pattern.compile("type:\\s*(duration|bytes)\\s*");

    record Result(List<String> warnings, List<String> errors) {}

    private ConfigValidator() {}

    static Result validate(Config user, Config reference)
    {
        List<String> warnings = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        Set<String> knownPaths = new TreeSet<>();
        Set<String> objectsForScalars = new TreeSet<>();
        reference.entrySet().forEach(entry -> knownPaths.add(entry.getKey()));

        for (Map.Entry<String, ConfigValue> entry : sorted(user)) {
            String path = entry.getKey();
            ConfigValue value = entry.getValue();
            if (!path.startsWith("handoff.")) {
                warnings.add("unknown configuration key '" + path + "' (from " + ConfigPaths.describeOrigin(value.origin())
                        + "): Handoff's keys live under 'handoff'; it is ignored");
                continue;
            }
            if (underFreeForm(path, reference)) {
                continue;
            }
            ConfigValue expected = referenceValue(reference, path);
            if (expected == null) {
                Optional<String> scalar = scalarAncestor(path, reference);
                if (scalar.isPresent()) {
                    // The user wrote { ... } where the reference has a single value: one error per such block.
                    if (objectsForScalars.add(scalar.get())) {
                        errors.add(objectForScalar(user, reference, scalar.get(), referenceValue(reference, scalar.get())));
                    }
                    continue;
                }
                warnings.add(unknownKey(path, value, knownPaths));
                continue;
            }
            checkValue(user, reference, path, value, expected).ifPresent(errors::add);
        }
        return new Result(warnings, errors);
    }

    private static List<Map.Entry<String, ConfigValue>> sorted(Config config)
    {
        List<Map.Entry<String, ConfigValue>> entries = new ArrayList<>(config.entrySet());
        entries.sort(Map.Entry.comparingByKey());
        return entries;
    }

    private static String unknownKey(String path, ConfigValue value, Set<String> knownPaths)
    {
        StringBuilder message = new StringBuilder("unknown configuration key '").append(path)
                .append("' (from ").append(ConfigPaths.describeOrigin(value.origin())).append(")");
        Typos.closest(path, knownPaths).ifPresentOrElse(
                close -> message.append(": did you mean '").append(close).append("'?"),
                () -> {
                    if (path.startsWith("handoff.plugins.")) {
                        message.append(": no installed plugin declares it");
                    }
                });
        return message.append(" It is ignored.").toString();
    }

    /** The closest enclosing path that the reference declares, if it declares a single value there rather than an object. */
    private static Optional<String> scalarAncestor(String path, Config reference)
    {
        String prefix = path;
        int dot;
        while ((dot = prefix.lastIndexOf('.')) > 0) {
            prefix = prefix.substring(0, dot);
            ConfigValue value = referenceValue(reference, prefix);
            if (value != null) {
                return value.valueType() == ConfigValueType.OBJECT ? Optional.empty() : Optional.of(prefix);
            }
        }
        return Optional.empty();
    }

    private static String objectForScalar(Config user, Config reference, String path, ConfigValue expected)
    {
        ConfigValue value = user.getValue(path);
        return path + " = " + ConfigPaths.render(reference, path, value) + " (from " + ConfigPaths.describeOrigin(value.origin())
                + "): expected " + describe(expected) + ", not an object" + allowedSuffix(expected.origin().comments());
    }

    private static ConfigValue referenceValue(Config reference, String path)
    {
        try {
            return reference.hasPathOrNull(path) ? reference.getValue(path) : null;
        }
        catch (ConfigException e) {
            return null;
        }
    }

    private static boolean underFreeForm(String path, Config reference)
    {
        String prefix = path;
        int dot;
        while ((dot = prefix.lastIndexOf('.')) > 0) {
            prefix = prefix.substring(0, dot);
            ConfigValue value = referenceValue(reference, prefix);
            if (value != null && value.valueType() == ConfigValueType.OBJECT
                    && value.origin().comments().stream().anyMatch(c -> c.strip().equals("free-form"))) {
                return true;
            }
        }
        return false;
    }

    private static Optional<String> checkValue(Config user, Config reference, String path, ConfigValue value, ConfigValue expected)
    {
        String seen = path + " = " + ConfigPaths.render(reference, path, value)
                + " (from " + ConfigPaths.describeOrigin(value.origin()) + ")";
        List<String> comments = expected.origin().comments();
        try {
            // a size or duration may default to a bare number (pool-memory = 0) and be written with a unit (8GiB)
            for (String comment : comments) {
                Matcher type = TYPE.matcher(comment.strip());
                if (type.matches()) {
                    if (type.group(1).equals("duration")) {
                        user.getDuration(path);
                    }
                    else {
                        user.getBytes(path);
                    }
                    return Optional.empty();
                }
            }
            switch (expected.valueType()) {
                case OBJECT -> {
                    return Optional.of(seen + ": expected an object (a { ... } block), not a single value");
                }
                case LIST -> {
                    user.getList(path);
                }
                case BOOLEAN -> {
                    user.getBoolean(path);
                }
                case NUMBER -> {
                    Number number = user.getNumber(path);
                    boolean integral = expected.unwrapped() instanceof Integer || expected.unwrapped() instanceof Long;
                    if (integral && !isIntegral(number)) {
                        return Optional.of(seen + ": expected an integer" + allowedSuffix(comments));
                    }
                    return checkRange(seen, new BigDecimal(number.toString()), comments);
                }
                case STRING -> {
                    String text = user.getString(path);
                    for (String comment : comments) {
                        Matcher choices = CHOICES.matcher(comment.strip());
                        if (choices.matches()) {
                            List<String> allowed = choiceList(choices.group(1));
                            if (!allowed.contains(text)) {
                                return Optional.of(seen + ": not an allowed value; allowed: " + String.join(" | ", allowed));
                            }
                        }
                    }
                }
                default -> { }
            }
        }
        catch (ConfigException.WrongType | ConfigException.BadValue e) {
            return Optional.of(seen + ": expected " + describe(expected) + allowedSuffix(comments));
        }
        return Optional.empty();
    }

    private static Optional<String> checkRange(String seen, BigDecimal number, List<String> comments)
    {
        for (String comment : comments) {
            Matcher range = RANGE.matcher(comment.strip());
            if (range.matches()) {
                BigDecimal low = new BigDecimal(range.group(1));
                BigDecimal high = new BigDecimal(range.group(2));
                if (number.compareTo(low) < 0 || number.compareTo(high) > 0) {
                    return Optional.of(seen + ": out of range; allowed: " + range.group(1) + ".." + range.group(2));
                }
            }
        }
        return Optional.empty();
    }

    private static boolean isIntegral(Number number)
    {
        return number instanceof Integer || number instanceof Long
                || (number instanceof Double d && d == Math.rint(d) && !d.isInfinite());
    }

    private static List<String> choiceList(String spec)
    {
        return Arrays.stream(spec.split("\\|")).map(String::strip).toList();
    }

    private static String allowedSuffix(List<String> comments)
    {
        for (String comment : comments) {
            String stripped = comment.strip();
            if (stripped.startsWith("allowed:")) {
                return "; " + stripped;
            }
        }
        return "";
    }

    /** A comment line that constrains a key ({@code allowed:}, {@code type:}, {@code free-form}, {@code secret}) rather than describing it. */
    static boolean isMachineLine(String line)
    {
        String stripped = line.strip();
        return stripped.startsWith("allowed:") || TYPE.matcher(stripped).matches() || stripped.equals("free-form") || stripped.equals("secret");
    }

    /** A key's type for the reference: what validation accepts for it. */
    static String typeOf(ConfigValue expected)
    {
        String type = switch (expected.valueType()) {
            case NUMBER -> expected.unwrapped() instanceof Integer || expected.unwrapped() instanceof Long ? "integer" : "number";
            case BOOLEAN -> "boolean";
            case LIST -> "list";
            case OBJECT -> "object";
            default -> "string";
        };
        for (String comment : expected.origin().comments()) {
            String stripped = comment.strip();
            Matcher typeLine = TYPE.matcher(stripped);
            if (typeLine.matches()) {
                type = typeLine.group(1).equals("duration") ? "duration" : "bytes";
            }
            else if (stripped.startsWith("allowed:")) {
                Matcher range = RANGE.matcher(stripped);
                Matcher choices = CHOICES.matcher(stripped);
                if (range.matches()) {
                    type = type + ", " + range.group(1) + " to " + range.group(2);
                }
                else if (choices.matches()) {
                    type = "one of " + String.join(", ", choiceList(choices.group(1)));
                }
            }
            else if (stripped.equals("secret")) {
                type = type + " (secret)";
            }
        }
        return type;
    }

    private static String describe(ConfigValue expected)
    {
        for (String comment : expected.origin().comments()) {
            Matcher type = TYPE.matcher(comment.strip());
            if (type.matches()) {
                return type.group(1).equals("duration") ? "a duration (e.g. 30s, 500ms)" : "a size in bytes (e.g. 64MiB)";
            }
        }
        return switch (expected.valueType()) {
            case NUMBER -> expected.unwrapped() instanceof Integer || expected.unwrapped() instanceof Long ? "an integer" : "a number";
            case BOOLEAN -> "a boolean (true or false)";
            case LIST -> "a list ([ ... ])";
            case STRING -> "a string";
            case OBJECT -> "an object";
            default -> expected.valueType().name().toLowerCase(Locale.ROOT);
        };
    }
}
