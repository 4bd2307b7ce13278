package io.handoff.core.plugin;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.pf4j.JarPluginManager;
import org.pf4j.PluginDescriptor;
import org.pf4j.PluginLoader;
import org.pf4j.PluginState;
import org.pf4j.PluginWrapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Optional;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;

/**
 * Third-party plugin JARs from one folder, loaded with PF4J, each in its own
 * {@link IsolatingPluginClassLoader}. Every JAR is loaded on its own so that one bad JAR is reported
 * with its reason and skipped while the others (and the engine) carry on.
 */
public final class ExternalPlugins
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(ExternalPlugins.class);

    /** A started plugin whose class loader may be searched for providers. */
    public record Loaded(String pluginId, String version, Path jar, ClassLoader loader, Optional<URL> reference) {}

    private final JarPluginManager manager;
    private final List<Loaded> loaded;
    private final List<PluginEntry> failures;

    private ExternalPlugins(JarPluginManager manager, List<Loaded> loaded, List<PluginEntry> failures)
    {
        this.manager = manager;
        this.loaded = List.copyOf(loaded);
        this.failures = List.copyOf(failures);
    }

    public static ExternalPlugins none()
    {
        return new ExternalPlugins(null, List.of(), List.of());
    }

    /** Loads and starts every {@code *.jar} in {@code folder}, in file-name order. A missing folder holds no plugins. */
    public static ExternalPlugins load(Path folder, String handoffVersion)
    {
        if (!Files.isDirectory(folder)) {
            log.debug("plugin folder {} does not exist; no third-party plugins", folder);
            return none();
        }
        JarPluginManager manager = new JarPluginManager(folder)
        {
            @Override
            protected PluginLoader createPluginLoader()
            {
                return new PluginLoader()
                {
                    @Override
                    public boolean isApplicable(Path path)
                    {
                        return Files.isRegularFile(path) && path.toString().endsWith(".jar");
                    }

                    @Override
                    public ClassLoader loadPlugin(Path path, PluginDescriptor descriptor)
                    {
                        IsolatingPluginClassLoader loader = new IsolatingPluginClassLoader(
                                pluginManager(), descriptor, ExternalPlugins.class.getClassLoader());
                        loader.addFile(path.toFile());
                        return loader;
                    }
                };
            }

            private JarPluginManager pluginManager()
            {
                return this;
            }
        };
        manager.setSystemVersion(handoffVersion);

        List<Loaded> loaded = new ArrayList<>();
        List<PluginEntry> failures = new ArrayList<>();
        for (Path jar : jars(folder)) {
            String source = jar.toString();
            Optional<String> problem = JarPreflight.check(jar);
            if (problem.isPresent()) {
                failures.add(failed(jar, JarPreflight.pluginId(jar), problem.get()));
                continue;
            }
            String pluginId = null;
            try {
                pluginId = manager.loadPlugin(jar);
                PluginState state = manager.startPlugin(pluginId);
                PluginWrapper wrapper = manager.getPlugin(pluginId);
                if (state != PluginState.STARTED) {
                    failures.add(failed(jar, pluginId, notStartedReason(manager, wrapper, handoffVersion, state)));
                    manager.unloadPlugin(pluginId);
                    continue;
                }
                ClassLoader loader = wrapper.getPluginClassLoader();
                Optional<URL> reference = Optional.ofNullable(((URLClassLoader) loader).findResource("reference.conf"));
                loaded.add(new Loaded(pluginId, wrapper.getDescriptor().getVersion(), jar, loader, reference));
                log.info("loaded plugin JAR {} (plugin {}@{})", source, pluginId, wrapper.getDescriptor().getVersion());
            }
            catch (RuntimeException | LinkageError e) {
                failures.add(failed(jar, pluginId, "PF4J could not load it: " + describe(e)));
                if (pluginId != null && manager.getPlugin(pluginId) != null) {
                    safeUnload(manager, pluginId);
                }
            }
        }
        return new ExternalPlugins(manager, loaded, failures);
    }

    private static PluginEntry failed(Path jar, String pluginId, String reason)
    {
        log.warn("skipping plugin JAR {}: {}", jar, reason);
        String id = pluginId != null ? pluginId : jar.getFileName().toString().replaceFirst("\\.jar$", "");
        return PluginEntry.failed(id, "unknown", null, jar.toString(), reason);
    }

    private static String notStartedReason(JarPluginManager manager, PluginWrapper wrapper, String handoffVersion, PluginState state)
    {
        String requires = wrapper.getDescriptor().getRequires();
        if (requires != null && !requires.isBlank() && !"*".equals(requires.strip())) {
            String constraint = requires.strip().matches("\\d+\\.\\d+\\.\\d+") ? ">=" + requires.strip() : requires.strip();
            if (!manager.getVersionManager().checkVersionConstraint(handoffVersion, constraint)) {
                return "Plugin-Requires '" + requires + "' is not met by Handoff " + handoffVersion
                        + ": use a build of the plugin for this Handoff version";
            }
        }
        String failure = wrapper.getFailedException() != null ? ": " + describe(wrapper.getFailedException()) : "";
        return "the plugin did not start (state " + state + ")" + failure;
    }

    private static void safeUnload(JarPluginManager manager, String pluginId)
    {
        try {
            manager.unloadPlugin(pluginId);
        }
        catch (RuntimeException e) {
            log.debug("unloading failed plugin {} failed too", pluginId, e);
        }
    }

    static String describe(Throwable e)
    {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? "" : ": " + root.getMessage();
        return root.getClass().getSimpleName() + message;
    }

    private static List<Path> jars(Path folder)
    {
        try (Stream<Path> files = Files.list(folder)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".jar")).sorted().toList();
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot list plugin folder " + folder, e);
        }
    }

    public List<Loaded> loaded()
    {
        return loaded;
    }

    public List<PluginEntry> failures()
    {
        return failures;
    }

    public List<URL> references()
    {
        return loaded.stream().flatMap(l -> l.reference().stream()).toList();
    }

    @Override
    public void close()
    {
        if (manager != null) {
            manager.stopPlugins();
            manager.unloadPlugins();
        }
    }

    /** Checks made before PF4J sees a JAR, so that the common mistakes get a reason an operator can act on. */
    static final class JarPreflight
    {
        private static final String SPI_PREFIX = "io/handoff/";
        private static final String SERVICES_PREFIX = "META-INF/services/io.handoff.spi.";

        private JarPreflight() {}

        static Optional<String> check(Path jar)
        {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                Manifest manifest = manifest(zip);
                if (manifest == null || manifest.getMainAttributes().getValue("Plugin-Id") == null) {
                    return Optional.of("no Plugin-Id in META-INF/MANIFEST.MF: a Handoff plugin JAR declares "
                            + "Plugin-Id, Plugin-Version and Plugin-Requires in its manifest");
                }
                boolean declaresProvider = false;
                for (Enumeration<? extends ZipEntry> entries = zip.entries(); entries.hasMoreElements(); ) {
                    String name = entries.nextElement().getName();
                    if (name.startsWith(SPI_PREFIX) && name.endsWith(".class")) {
                        return Optional.of("it bundles its own copy of Handoff classes (" + name + "): depend on "
                                + "io.handoff:handoff-spi with <scope>provided</scope> (and on nothing else of Handoff's at run time) "
                                + "so that the engine's SPI is the only one");
                    }
                    declaresProvider |= name.startsWith(SERVICES_PREFIX);
                }
                if (!declaresProvider) {
                    return Optional.of("it declares no provider: add META-INF/services/io.handoff.spi.transfer.TransferBackendProvider "
                            + "(or ...attention.AttentionBackendProvider) naming the provider class");
                }
                return Optional.empty();
            }
            catch (ZipException e) {
                return Optional.of("not a valid JAR (zip) file: " + e.getMessage());
            }
            catch (IOException e) {
                return Optional.of("cannot read the JAR: " + e.getMessage());
            }
        }

        static String pluginId(Path jar)
        {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                Manifest manifest = manifest(zip);
                return manifest == null ? null : manifest.getMainAttributes().getValue("Plugin-Id");
            }
            catch (IOException e) {
                return null;
            }
        }

        private static Manifest manifest(ZipFile zip)
                throws IOException
        {
            ZipEntry entry = zip.getEntry("META-INF/MANIFEST.MF");
            if (entry == null) {
                return null;
            }
            try (InputStream in = zip.getInputStream(entry)) {
                return new Manifest(in);
            }
        }
    }
}
