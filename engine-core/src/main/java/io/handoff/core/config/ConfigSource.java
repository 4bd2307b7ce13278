package io.handoff.core.config;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Where the user's configuration comes from, highest precedence first: {@code -Dkey=value} given to a
 * {@code handoff} command, JVM system properties under {@code handoff.}, environment variables
 * {@code CONFIG_FORCE_<path>} (Typesafe Config's convention: {@code .} is {@code _}, {@code -} is
 * {@code __}), the {@code --config} file (or {@code conf/handoff.conf} of the distribution), then
 * every module's {@code reference.conf}.
 */
public record ConfigSource(Optional<Path> file, Map<String, String> overrides, Map<String, String> environment)
{
    public ConfigSource
    {
        requireNonNull(file, "file is null");
        overrides = Map.copyOf(new LinkedHashMap<>(requireNonNull(overrides, "overrides is null")));
        environment = Map.copyOf(requireNonNull(environment, "environment is null"));
    }

    public static ConfigSource of(Path file)
    {
        return new ConfigSource(Optional.ofNullable(file), Map.of(), Map.of());
    }

    public ConfigSource withOverrides(Map<String, String> extra)
    {
        Map<String, String> merged = new LinkedHashMap<>(overrides);
        merged.putAll(extra);
        return new ConfigSource(file, merged, environment);
    }
}
