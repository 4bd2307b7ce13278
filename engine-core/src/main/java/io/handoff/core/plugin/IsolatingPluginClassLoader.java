package io.handoff.core.plugin;

import org.pf4j.ClassLoadingStrategy;
import org.pf4j.PluginClassLoader;
import org.pf4j.PluginDescriptor;
import org.pf4j.PluginManager;

import java.util.regex.Pattern;

/**
 * The class loader of one third-party plugin JAR. Its parent is the platform loader, so a plugin sees
 * the JDK and its own JAR, and nothing of the engine but the packages matched by {@link #SHARED}: the
 * SPI (one copy, or provider casts fail) and the logging APIs (so plugins log through the host's
 * configuration instead of a silent no-op binding). Everything else in the engine is invisible.
 */
final class IsolatingPluginClassLoader
        extends PluginClassLoader
{
    /** The one rule for what a plugin shares with the host. */
    static final Pattern SHARED = Pattern.compile("(io\\.handoff\\.spi|org\\.slf4j|org\\.apache\\.logging\\.log4j|org\\.pf4j)\\..*");

    private final ClassLoader host;

    IsolatingPluginClassLoader(PluginManager manager, PluginDescriptor descriptor, ClassLoader host)
    {
        super(manager, descriptor, ClassLoader.getPlatformClassLoader(), ClassLoadingStrategy.PDA);
        this.host = host;
    }

    @Override
    public Class<?> loadClass(String name)
            throws ClassNotFoundException
    {
        if (SHARED.matcher(name).matches()) {
            return host.loadClass(name);
        }
        return super.loadClass(name);
    }
}
