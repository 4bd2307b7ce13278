package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.HandoffVersion;
import io.handoff.core.config.ConfigSource;
import io.handoff.core.config.HandoffConfig;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.core.plugin.ExternalPlugins;
import io.handoff.core.plugin.PluginRegistry;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.apache.logging.log4j.core.config.Configurator;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What every command starts from: the validated configuration, logging set up from it, and the plugin
 * registry. Third-party JARs are loaded before the configuration is validated, because their
 * {@code reference.conf} is part of the schema.
 */
public final class Engine
        implements AutoCloseable
{
    private final HandoffConfig config;
    private final PluginRegistry plugins;
    private ClusterSecurity security;

    private Engine(HandoffConfig config, PluginRegistry plugins)
    {
        this.config = config;
        this.plugins = plugins;
    }

    public static Engine start(ConfigSource source)
    {
        Config userLayers = HandoffConfig.userLayers(source);
        Path pluginDir = pluginDir(userLayers.hasPath("handoff.plugin-dir") ? userLayers.getString("handoff.plugin-dir") : "plugins");
        ExternalPlugins external = ExternalPlugins.load(pluginDir, HandoffVersion.get());
        try {
            HandoffConfig config = HandoffConfig.load(source, external.references());
            configureLogging(config.config());
            Logger log = LogManager.getLogger(Engine.class);
            config.warnings().forEach(log::warn);
            return new Engine(config, PluginRegistry.discover(external, config::pluginSettings));
        }
        catch (RuntimeException e) {
            external.close();
            throw e;
        }
    }

    /** The distribution's home ({@code -Dhandoff.home}, set by bin/handoff), or the working directory. */
    public static Path home()
    {
        String home = System.getProperty("handoff.home");
        return Path.of(home == null || home.isBlank() ? "." : home).toAbsolutePath().normalize();
    }

    private static Path pluginDir(String configured)
    {
        Path path = Path.of(configured);
        return path.isAbsolute() ? path : home().resolve(path);
    }

    private static void configureLogging(Config config)
    {
        String format = config.getString("handoff.logging.format");
        String level = config.getString("handoff.logging.level");
        boolean changed = !Objects.equals(System.getProperty("handoff.log.format", "text"), format)
                || !Objects.equals(System.getProperty("handoff.log.level", "info"), level);
        System.setProperty("handoff.log.format", format);
        System.setProperty("handoff.log.level", level);
        if (changed) {
            Configurator.reconfigure();
        }
    }

    public HandoffConfig config()
    {
        return config;
    }

    public PluginRegistry plugins()
    {
        return plugins;
    }

    /**
     * The {@code handoff.security} settings with the cluster secret, read from its file on the first call and never
     * again: the transfer layer and the HTTP layer (the router's signatures) share this one copy. A command that needs
     * no secret never reads the file.
     */
    public synchronized ClusterSecurity security()
    {
        if (security == null) {
            security = ClusterSecurity.from(config.config());
        }
        return security;
    }

    @Override
    public void close()
    {
        plugins.close();
    }
}
