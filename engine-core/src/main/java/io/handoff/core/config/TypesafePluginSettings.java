package io.handoff.core.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.handoff.spi.PluginSettings;

import java.time.Duration;
import java.util.function.Function;

/** {@link PluginSettings} over a plugin's subtree of the effective configuration. */
record TypesafePluginSettings(String pluginId, Config subtree)
        implements PluginSettings
{
    @Override
    public boolean hasPath(String path)
    {
        return subtree.hasPath(path);
    }

    @Override
    public String getString(String path)
    {
        return read(path, subtree::getString);
    }

    @Override
    public boolean getBoolean(String path)
    {
        return read(path, subtree::getBoolean);
    }

    @Override
    public int getInt(String path)
    {
        return read(path, subtree::getInt);
    }

    @Override
    public long getBytes(String path)
    {
        return read(path, subtree::getBytes);
    }

    @Override
    public Duration getDuration(String path)
    {
        return read(path, subtree::getDuration);
    }

    private <T> T read(String path, Function<String, T> reader)
    {
        try {
            return reader.apply(path);
        }
        catch (ConfigException e) {
            throw new IllegalArgumentException("handoff.plugins." + pluginId + "." + path + ": " + e.getMessage(), e);
        }
    }
}
