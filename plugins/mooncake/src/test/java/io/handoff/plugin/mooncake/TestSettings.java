package io.handoff.plugin.mooncake;

import io.handoff.spi.PluginSettings;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Plugin settings as the engine hands them over ({@link PluginSettings#fromReference}: this module's
 * reference.conf with validated overrides), and the raw reference.conf for the tests of its schema lines.
 */
final class TestSettings
{
    private static final Pattern ENTRY = Pattern.compile("^\\s*([a-z][a-z0-9-]*)\\s*=\\s*\"?([^\"]*)\"?\\s*$");

    private TestSettings() {}

    static PluginSettings defaults()
    {
        return with();
    }

    /** The defaults with {@code key, value, key, value, ...} overridden; an unknown key or a bad value throws. */
    static PluginSettings with(String... overrides)
    {
        Map<String, String> values = new LinkedHashMap<>();
        for (int i = 0; i < overrides.length; i += 2) {
            values.put(overrides[i], overrides[i + 1]);
        }
        return PluginSettings.fromReference("mooncake", MooncakeProvider.class.getClassLoader(), values);
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
        try (InputStream in = MooncakeProvider.class.getResourceAsStream("/reference.conf")) {
            if (in == null) {
                throw new IllegalStateException("reference.conf is not on the module path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
