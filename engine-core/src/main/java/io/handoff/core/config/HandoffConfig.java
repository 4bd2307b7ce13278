package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigResolveOptions;
import io.handoff.spi.PluginSettings;

import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import static java.util.Objects.requireNonNull;

/**
 * The effective configuration: the user's layers over every module's {@code reference.conf}, validated
 * against that reference. Loading never logs (logging is configured from the result); warnings are
 * returned for the caller to report.
 */
public final class HandoffConfig
{
    private static final String ENV_PREFIX = "CONFIG_FORCE_";

    private final Config effective;
    private final Config user;
    private final Config reference;
    private final List<String> warnings;
    private final ConfigSource source;

    private HandoffConfig(ConfigSource source, Config effective, Config user, Config reference, List<String> warnings)
    {
        this.source = source;
        this.effective = effective;
        this.user = user;
        this.reference = reference;
        this.warnings = List.copyOf(warnings);
    }

    /**
     * Loads and validates. Throws {@link InvalidConfigException} when a value has the wrong type or is
     * out of range; unknown keys become warnings.
     *
     * @param extraReferences {@code reference.conf} files of third-party plugins, which the host's class
     *         loader cannot see
     */
    public static HandoffConfig load(ConfigSource source, Collection<URL> extraReferences)
    {
        Config user = userLayers(source);
        Config reference = reference(extraReferences);
        Config effective;
        Config resolvedUser;
        try {
            ConfigResolveOptions options = ConfigResolveOptions.defaults().setUseSystemEnvironment(false);
            effective = user.withFallback(reference).resolve(options);
            // validation reads the user's layers with their substitutions resolved: an unresolved one (e.g. an object
            // merged with an optional ${?X}) cannot even be listed
            resolvedUser = user.resolveWith(effective, options);
        }
        catch (ConfigException e) {
            throw new InvalidConfigException(List.of(e.getMessage()));
        }
        ConfigValidator.Result result = ConfigValidator.validate(resolvedUser, reference);
        if (!result.errors().isEmpty()) {
            throw new InvalidConfigException(result.errors());
        }
        return new HandoffConfig(source, effective, user, reference, result.warnings());
    }

    /** The user's layers only, unvalidated: enough to find the plugin folder before plugins are loaded. */
    public static Config userLayers(ConfigSource source)
    {
        Config layered = overrides(source.overrides());
        layered = layered.withFallback(ConfigFactory.parseProperties(handoffSystemProperties(),
                ConfigParseOptions.defaults().setOriginDescription("JVM system property")));
        layered = layered.withFallback(fromEnvironment(source.environment()));
        if (source.file().isPresent()) {
            layered = layered.withFallback(parseFile(source.file().get()));
        }
        return layered;
    }

    /** {@code -Dkey=value}: a value written as a HOCON list or object ({@code [...]}, {@code {...}}) is parsed as one, anything else is a string. */
    private static Config overrides(Map<String, String> overrides)
    {
        Config config = ConfigFactory.empty();
        ConfigParseOptions options = ConfigParseOptions.defaults().setOriginDescription("-D on the command line");
        for (Map.Entry<String, String> entry : overrides.entrySet()) {
            String value = entry.getValue().strip();
            Config one;
            if (value.startsWith("[") || value.startsWith("{")) {
                try {
                    one = ConfigFactory.parseString(entry.getKey() + " = " + value, options);
                }
                catch (ConfigException e) {
                    throw new InvalidConfigException(List.of("-D" + entry.getKey() + "=" + entry.getValue() + " is not valid HOCON: " + e.getMessage()));
                }
            }
            else {
                one = ConfigFactory.parseMap(Map.of(entry.getKey(), entry.getValue()), "-D on the command line");
            }
            config = one.withFallback(config);
        }
        return config;
    }

    static Config reference(Collection<URL> extraReferences)
    {
        Config reference = ConfigFactory.parseResources(HandoffConfig.class.getClassLoader(), "reference.conf");
        for (URL url : extraReferences) {
            reference = reference.withFallback(ConfigFactory.parseURL(url));
        }
        return reference.resolve();
    }

    private static Config parseFile(Path file)
    {
        if (!Files.isRegularFile(file)) {
            throw new InvalidConfigException(List.of("configuration file " + file + " does not exist or is not a file"));
        }
        try {
            return ConfigFactory.parseFile(file.toFile(), ConfigParseOptions.defaults().setAllowMissing(false));
        }
        catch (ConfigException.Parse e) {
            throw new InvalidConfigException(List.of("configuration file " + file + " is not valid HOCON: " + e.getMessage()));
        }
        catch (ConfigException e) {
            throw new InvalidConfigException(List.of("cannot read configuration file " + file + ": " + e.getMessage()));
        }
    }

    private static Properties handoffSystemProperties()
    {
        Properties selected = new Properties();
        System.getProperties().forEach((key, value) -> {
            // handoff.home and handoff.log.* belong to the launcher and logging, not to the engine's configuration.
            String name = key.toString();
            if (name.startsWith("handoff.") && !name.equals("handoff.home") && !name.startsWith("handoff.log.")) {
                selected.put(name, value);
            }
        });
        return selected;
    }

    /** {@code CONFIG_FORCE_handoff_kv_page__size=32} sets {@code handoff.kv.page-size}. */
    static Config fromEnvironment(Map<String, String> environment)
    {
        Map<String, String> paths = new TreeMap<>();
        environment.forEach((name, value) -> {
            if (name.startsWith(ENV_PREFIX) && name.length() > ENV_PREFIX.length()) {
                paths.put(envNameToPath(name.substring(ENV_PREFIX.length())), value);
            }
        });
        return ConfigFactory.parseMap(paths, "environment variable");
    }

    static String envNameToPath(String name)
    {
        StringBuilder path = new StringBuilder();
        int i = 0;
        while (i < name.length()) {
            if (name.startsWith("___", i)) {
                path.append('_');
                i += 3;
            }
            else if (name.startsWith("__", i)) {
                path.append('-');
                i += 2;
            }
            else if (name.charAt(i) == '_') {
                path.append('.');
                i++;
            }
            else {
                path.append(name.charAt(i));
                i++;
            }
        }
        return path.toString();
    }

    /** Where the configuration came from: what a process this one starts (a tensor-parallel rank) is given to read the same. */
    public ConfigSource source()
    {
        return source;
    }

    public Config config()
    {
        return effective;
    }

    public List<String> warnings()
    {
        return warnings;
    }

    /** The settings of one plugin ({@code handoff.plugins.<id>}); empty when nothing declares any. */
    public PluginSettings pluginSettings(String pluginId)
    {
        requireNonNull(pluginId, "pluginId is null");
        String path = "handoff.plugins." + ConfigPaths.quoteKey(pluginId);
        Config subtree = effective.hasPath(path) ? effective.getConfig(path) : ConfigFactory.empty();
        return new TypesafePluginSettings(pluginId, subtree);
    }

    /** What the test kit's ReferenceSettings reads: one plugin's reference defaults with validated overrides. */
    public static PluginSettings pluginSettings(String pluginId, ClassLoader loader, Map<String, String> overrides)
    {
        requireNonNull(pluginId, "pluginId is null");
        String prefix = "handoff.plugins." + ConfigPaths.quoteKey(pluginId);
        Map<String, String> paths = new TreeMap<>();
        overrides.forEach((key, value) -> paths.put(prefix + "." + key, value));
        Config user = overrides(paths);
        Config reference = ConfigFactory.parseResources(loader, "reference.conf").resolve();
        ConfigValidator.Result result = ConfigValidator.validate(user, reference);
        List<String> problems = new ArrayList<>(result.errors());
        problems.addAll(result.warnings());
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
        }
        Config effective = user.withFallback(reference).resolve();
        return new TypesafePluginSettings(pluginId, effective.hasPath(prefix) ? effective.getConfig(prefix) : ConfigFactory.empty());
    }

    /** Every leaf under {@code handoff}, sorted by path, with where its value came from; secret values redacted. */
    public List<EffectiveValue> effectiveValues()
    {
        List<EffectiveValue> values = new ArrayList<>();
        effective.getConfig("handoff").entrySet().forEach(entry -> values.add(new EffectiveValue(
                "handoff." + entry.getKey(),
                ConfigPaths.render(reference, "handoff." + entry.getKey(), entry.getValue()),
                ConfigPaths.describeOrigin(entry.getValue().origin()))));
        Collections.sort(values);
        return values;
    }

    /** Every key the reference declares, for people: default, type and description ({@code handoff config --reference}). */
    public ConfigReference documentation()
    {
        return ConfigReference.of(reference);
    }

    /** The reference alone, for documentation and tests. */
    Config reference()
    {
        return reference;
    }

    Config user()
    {
        return user;
    }

    public record EffectiveValue(String path, String value, String origin)
            implements Comparable<EffectiveValue>
    {
        @Override
        public int compareTo(EffectiveValue other)
        {
            return path.compareTo(other.path);
        }
    }
}
