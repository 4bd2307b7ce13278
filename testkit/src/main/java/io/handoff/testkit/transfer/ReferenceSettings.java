package io.handoff.testkit.transfer;

import io.handoff.core.config.HandoffConfig;
import io.handoff.spi.HandoffProvider;
import io.handoff.spi.PluginSettings;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * A plugin's settings as the engine hands them over ({@code HandoffConfig.pluginSettings}: the plugin's own
 * reference.conf with validated overrides), and that reference.conf's text, for tests of its schema lines.
 *
 * @param pluginId the provider's id: its settings are {@code handoff.plugins.<pluginId>}
 * @param loader the loader that sees the plugin's reference.conf (the provider's)
 */
public record ReferenceSettings(String pluginId, ClassLoader loader)
{
    private static final Pattern ENTRY = Pattern.compile("^\\s*([a-z][a-z0-9-]*)\\s*=\\s*\"?([^\"]*)\"?\\s*$");

    public ReferenceSettings
    {
        requireNonNull(pluginId, "pluginId is null");
        requireNonNull(loader, "loader is null");
    }

    /** The settings of {@code provider}, read from the reference.conf its class loader sees. */
    public static ReferenceSettings of(HandoffProvider provider)
    {
        return new ReferenceSettings(provider.id(), provider.getClass().getClassLoader());
    }

    public PluginSettings defaults()
    {
        return with(Map.of());
    }

    /** The defaults with {@code key, value, key, value, ...} overridden; an unknown key or a bad value throws. */
    public PluginSettings with(String... overrides)
    {
        if (overrides.length % 2 != 0) {
            throw new IllegalArgumentException("overrides come in key, value pairs; got " + overrides.length + " strings");
        }
        Map<String, String> values = new LinkedHashMap<>();
        for (int i = 0; i < overrides.length; i += 2) {
            values.put(overrides[i], overrides[i + 1]);
        }
        return with(values);
    }

    /** The defaults with {@code overrides} (keys relative to {@code handoff.plugins.<pluginId>}); an unknown key or a bad value throws. */
    public PluginSettings with(Map<String, String> overrides)
    {
        return HandoffConfig.pluginSettings(pluginId, loader, overrides);
    }

    /** The keys and default values the plugin's reference.conf declares, in order. */
    public Map<String, String> declared()
    {
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : text().split("\n")) {
            Matcher entry = ENTRY.matcher(line);
            if (!line.strip().startsWith("#") && entry.matches()) {
                values.put(entry.group(1), entry.group(2));
            }
        }
        return values;
    }

    /**
     * What the reference.conf fails to document, one line per key: every key needs a comment line right above it,
     * and that line must be {@code # type: duration} for a time, {@code # type: bytes} for a size named "-bytes"
     * (the lines the engine's validation reads). Empty when every key is documented.
     */
    public List<String> undocumented()
    {
        List<String> lines = text().lines().map(String::strip).toList();
        List<String> problems = new ArrayList<>();
        declared().forEach((key, value) -> {
            int at = indexOf(lines, key);
            String above = at > 0 ? lines.get(at - 1) : "";
            if (!above.startsWith("#")) {
                problems.add(key + ": no comment line above it");
            }
            else if (value.matches("[0-9]+(ms|s|m)") && !above.equals("# type: duration")) {
                problems.add(key + ": a duration, but the line above is '" + above + "', not '# type: duration'");
            }
            else if (value.matches("[0-9]+(B|KiB|MiB|GiB)?") && key.endsWith("-bytes") && !above.equals("# type: bytes")) {
                problems.add(key + ": a size, but the line above is '" + above + "', not '# type: bytes'");
            }
        });
        return problems;
    }

    /** The text of the reference.conf that declares {@code handoff.plugins.<pluginId>} (the engine's own has others). */
    public String text()
    {
        Pattern declaration = Pattern.compile("handoff\\.plugins\\." + Pattern.quote(pluginId) + "(?![a-z0-9-])");
        try {
            for (URL url : Collections.list(loader.getResources("reference.conf"))) {
                String text = read(url);
                if (declaration.matcher(text).find()) {
                    return text;
                }
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no reference.conf that declares handoff.plugins." + pluginId + " is visible to " + loader
                + ": put one in the plugin's resources");
    }

    private static int indexOf(List<String> lines, String key)
    {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(key + " =")) {
                return i;
            }
        }
        throw new IllegalStateException("key " + key + " vanished from reference.conf");
    }

    private static String read(URL url)
            throws IOException
    {
        try (InputStream in = url.openStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
