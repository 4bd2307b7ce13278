package io.handoff.bench.transfer;

import io.handoff.core.config.ConfigSource;
import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** {@code --config} and {@code -D}, as every command takes them, and how they are passed on to the receiver process. */
final class ConfigOptions
{
    @Option(names = "--config", paramLabel = "FILE",
            description = "HOCON configuration file (default: conf/handoff.conf of the distribution, if present).")
    Path configFile;

    @Option(names = "-D", paramLabel = "KEY=VALUE", mapFallbackValue = "",
            description = "Override one configuration key, e.g. -Dhandoff.plugins.nixl.tls=tcp. Repeatable; wins over files.")
    Map<String, String> overrides = new LinkedHashMap<>();

    ConfigSource source(Map<String, String> extra)
    {
        Optional<Path> file = Optional.ofNullable(configFile);
        if (file.isEmpty()) {
            Path defaultFile = Engine.home().resolve("conf").resolve("handoff.conf");
            if (Files.isRegularFile(defaultFile)) {
                file = Optional.of(defaultFile);
            }
        }
        Map<String, String> all = new LinkedHashMap<>(overrides);
        all.putAll(extra);
        return new ConfigSource(file, all, System.getenv());
    }

    /** The same configuration as options of a child process. */
    List<String> arguments(Map<String, String> extra)
    {
        List<String> arguments = new ArrayList<>();
        if (configFile != null) {
            arguments.add("--config");
            arguments.add(configFile.toAbsolutePath().toString());
        }
        Map<String, String> all = new LinkedHashMap<>(overrides);
        all.putAll(extra);
        all.forEach((key, value) -> arguments.add("-D" + key + "=" + value));
        return arguments;
    }
}
