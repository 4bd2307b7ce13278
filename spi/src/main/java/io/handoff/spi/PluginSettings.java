package io.handoff.spi;

import java.time.Duration;

/**
 * A provider's own configuration: the subtree {@code handoff.plugins.<id>} of the effective
 * configuration, already validated against the provider's {@code reference.conf}. Paths are relative
 * to that subtree ({@code "forward-sync"}, not {@code "handoff.plugins.mori.forward-sync"}).
 * Reading a path that neither the user nor the reference defines throws
 * {@link IllegalArgumentException} naming the full path.
 */
public interface PluginSettings
{
    /** The provider id these settings belong to. */
    String pluginId();

    boolean hasPath(String path);

    String getString(String path);

    boolean getBoolean(String path);

    int getInt(String path);

    long getBytes(String path);

    Duration getDuration(String path);

    /** Settings with nothing in them; every read fails. For tests and for providers without a configuration. */
    static PluginSettings empty(String pluginId)
    {
        return new PluginSettings()
        {
            @Override
            public String pluginId()
            {
                return pluginId;
            }

            @Override
            public boolean hasPath(String path)
            {
                return false;
            }

            @Override
            public String getString(String path)
            {
                throw missing(path);
            }

            @Override
            public boolean getBoolean(String path)
            {
                throw missing(path);
            }

            @Override
            public int getInt(String path)
            {
                throw missing(path);
            }

            @Override
            public long getBytes(String path)
            {
                throw missing(path);
            }

            @Override
            public Duration getDuration(String path)
            {
                throw missing(path);
            }

            private IllegalArgumentException missing(String path)
            {
                return new IllegalArgumentException("no setting handoff.plugins." + pluginId + "." + path);
            }
        };
    }
}
