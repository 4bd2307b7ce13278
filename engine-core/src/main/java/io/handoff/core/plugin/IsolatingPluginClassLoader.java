package io.handoff.core.plugin;

import org.pf4j.ClassLoadingStrategy;
import org.pf4j.PluginClassLoader;
import org.pf4j.PluginDescriptor;
import org.pf4j.PluginManager;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.util.Set;
import java.util.regex.Pattern;

import static java.util.stream.Collectors.toUnmodifiableSet;

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

    /** The JDK's own modules: a plugin may use them whichever built-in loader defines them. */
    private static final Set<String> JDK_MODULES = ModuleFinder.ofSystem().findAll().stream()
            .map(ModuleReference::descriptor).map(ModuleDescriptor::name).collect(toUnmodifiableSet());

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
        Class<?> loaded = super.loadClass(name);
        // On the module path the platform loader delegates every package of a boot-layer module to the
        // application loader, so the engine's internals and libraries would reach a plugin through its
        // parent. Only the plugin's own classes, other plugins' and the JDK's get through.
        ClassLoader definer = loaded.getClassLoader();
        if (definer == null || definer == this || definer instanceof PluginClassLoader
                || (loaded.getModule().isNamed() && JDK_MODULES.contains(loaded.getModule().getName()))) {
            return loaded;
        }
        throw new ClassNotFoundException(name + " belongs to the engine or its libraries: a plugin sees only the SPI "
                + "(io.handoff.spi.*), the logging APIs and the JDK; bundle any other library in the plugin JAR");
    }
}
