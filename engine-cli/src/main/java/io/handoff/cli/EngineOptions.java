package io.handoff.cli;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/** The options every command takes: where the configuration comes from (public for the bench commands' packages). */
public final class EngineOptions
{
    @Option(names = "--config", paramLabel = "FILE",
            description = "HOCON configuration file (default: conf/handoff.conf of the distribution, if present).")
    public Path configFile;

    @Option(names = "-D", paramLabel = "KEY=VALUE", mapFallbackValue = "",
            description = "Override one configuration key, e.g. -Dhandoff.logging.level=debug. Repeatable; wins over files.")
    public Map<String, String> overrides = new LinkedHashMap<>();

    public ConfigSource source()
    {
        Optional<Path> file = Optional.ofNullable(configFile);
        if (file.isEmpty()) {
            Path defaultFile = Engine.home().resolve("conf").resolve("handoff.conf");
            if (Files.isRegularFile(defaultFile)) {
                file = Optional.of(defaultFile);
            }
        }
        return new ConfigSource(file, overrides, System.getenv());
    }
}
