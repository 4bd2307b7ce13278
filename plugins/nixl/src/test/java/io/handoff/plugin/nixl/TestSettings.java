package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Plugin settings as the core would hand them over: this module's reference.conf defaults with overrides.
 * The reference is read from the module itself, so a key the backend reads but the reference lacks fails here.
 */
final class TestSettings
        implements PluginSettings
{
    private static final Pattern ENTRY = Pattern.compile("^\\s*([a-z][a-z0-9-]*)\\s*=\\s*\"?([^\"]*)\"?\\s*$");
    private static final Pattern AMOUNT = Pattern.compile("^([0-9]+)\\s*([A-Za-z]*)$");

    private final Map<String, String> values;

    private TestSettings(Map<String, String> values)
    {
        this.values = values;
    }

    static TestSettings defaults()
    {
        return new TestSettings(reference());
    }

    /** The defaults with {@code key, value, key, value, ...} overridden. */
    static TestSettings with(String... overrides)
    {
        Map<String, String> values = reference();
        for (int i = 0; i < overrides.length; i += 2) {
            if (!values.containsKey(overrides[i])) {
                throw new IllegalArgumentException("reference.conf declares no key " + overrides[i]);
            }
            values.put(overrides[i], overrides[i + 1]);
        }
        return new TestSettings(values);
    }

    /** The keys and default values declared in reference.conf, in order. */
    static Map<String, String> reference()
    {
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : referenceText().split("\n")) {
            Matcher entry = ENTRY.matcher(line);
            if (!line.strip().startsWith("#") && entry.matches()) {
                values.put(entry.group(1), entry.group(2));
            }
        }
        return values;
    }

    static String referenceText()
    {
        try (InputStream in = NixlProvider.class.getResourceAsStream("/reference.conf")) {
            if (in == null) {
                throw new IllegalStateException("reference.conf is not on the module path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String pluginId()
    {
        return "nixl";
    }

    @Override
    public boolean hasPath(String path)
    {
        return values.containsKey(path);
    }

    @Override
    public String getString(String path)
    {
        String value = values.get(path);
        if (value == null) {
            throw new IllegalArgumentException("no setting handoff.plugins.nixl." + path);
        }
        return value;
    }

    @Override
    public boolean getBoolean(String path)
    {
        return Boolean.parseBoolean(getString(path));
    }

    @Override
    public int getInt(String path)
    {
        return Integer.parseInt(getString(path));
    }

    @Override
    public long getBytes(String path)
    {
        Matcher amount = amount(path);
        long unit = switch (amount.group(2)) {
            case "", "B" -> 1;
            case "KiB" -> 1L << 10;
            case "MiB" -> 1L << 20;
            case "GiB" -> 1L << 30;
            default -> throw new IllegalArgumentException(path + ": unknown size unit " + amount.group(2));
        };
        return Long.parseLong(amount.group(1)) * unit;
    }

    @Override
    public Duration getDuration(String path)
    {
        Matcher amount = amount(path);
        long value = Long.parseLong(amount.group(1));
        return switch (amount.group(2)) {
            case "ms" -> Duration.ofMillis(value);
            case "s" -> Duration.ofSeconds(value);
            case "m" -> Duration.ofMinutes(value);
            default -> throw new IllegalArgumentException(path + ": unknown duration unit " + amount.group(2));
        };
    }

    private Matcher amount(String path)
    {
        Matcher amount = AMOUNT.matcher(getString(path).strip());
        if (!amount.matches()) {
            throw new IllegalArgumentException(path + " = " + getString(path) + ": not an amount");
        }
        return amount;
    }
}
