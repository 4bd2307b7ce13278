package io.handoff.core.plugin;

import io.handoff.spi.Availability;
import io.handoff.spi.HandoffProvider;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.Spi;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.transfer.TransferBackendProvider;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Every provider the engine knows, built-in or third-party, with its capabilities and availability.
 * One discovery path serves both sources: {@link ServiceLoader} over the module path for built-ins, and
 * over each started PF4J plugin's class loader (keeping only classes that loader defines) for JARs.
 *
 * <p>Two providers with the same id: the first one registered wins, built-ins before JARs and JARs in
 * file-name order; the other is listed as unavailable, naming the one that took precedence.
 */
public final class PluginRegistry
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(PluginRegistry.class);
    private static final Pattern ID = Pattern.compile("[a-z][a-z0-9-]{0,63}");
    private static final List<Class<? extends HandoffProvider>> SERVICES =
            List.of(TransferBackendProvider.class, AttentionBackendProvider.class);

    private final List<PluginEntry> entries;
    private final Map<PluginEntry, ClassLoader> loaders;
    private final ExternalPlugins external;

    private PluginRegistry(List<PluginEntry> entries, Map<PluginEntry, ClassLoader> loaders, ExternalPlugins external)
    {
        this.entries = List.copyOf(entries);
        this.loaders = Map.copyOf(loaders);
        this.external = external;
    }

    /** Discovers built-ins and the providers of the already loaded third-party JARs, and probes each once. */
    public static PluginRegistry discover(ExternalPlugins external, Function<String, PluginSettings> settings)
    {
        Map<String, PluginEntry> byId = new LinkedHashMap<>();
        List<PluginEntry> all = new ArrayList<>();
        Map<PluginEntry, ClassLoader> loaders = new LinkedHashMap<>();

        ClassLoader hostLoader = PluginRegistry.class.getClassLoader();
        for (Class<? extends HandoffProvider> service : SERVICES) {
            List<Found> builtins = new ArrayList<>(providers(service, hostLoader, false));
            // Module-path order is unspecified; sort so reports and the duplicate rule are stable.
            builtins.sort(Comparator.comparing(found -> found.provider() == null ? "" : found.provider().getClass().getName()));
            for (Found found : builtins) {
                register(found, PluginEntry.BUILTIN, hostLoader, null, settings, byId, all, loaders);
            }
        }
        for (ExternalPlugins.Loaded plugin : external.loaded()) {
            List<Found> found = new ArrayList<>();
            for (Class<? extends HandoffProvider> service : SERVICES) {
                found.addAll(providers(service, plugin.loader(), true));
            }
            if (found.isEmpty()) {
                all.add(PluginEntry.failed(plugin.pluginId(), "unknown", plugin.version(), plugin.jar().toString(),
                        "no provider defined by this JAR was found through META-INF/services"));
            }
            for (Found f : found) {
                register(f, plugin.jar().toString(), plugin.loader(), plugin.pluginId(), settings, byId, all, loaders);
            }
        }
        all.addAll(external.failures());
        return new PluginRegistry(all, loaders, external);
    }

    private record Found(HandoffProvider provider, String failure, String kind) {}

    private static List<Found> providers(Class<? extends HandoffProvider> service, ClassLoader loader, boolean onlyOwnClasses)
    {
        String kind = service == TransferBackendProvider.class ? "transfer" : "attention";
        List<Found> found = new ArrayList<>();
        Iterator<? extends ServiceLoader.Provider<? extends HandoffProvider>> it = ServiceLoader.load(service, loader).stream().iterator();
        // A broken provider throws from the iterator; the iterator then moves on to the next one.
        for (int failures = 0; failures < 100; ) {
            ServiceLoader.Provider<? extends HandoffProvider> candidate;
            try {
                if (!it.hasNext()) {
                    break;
                }
                candidate = it.next();
            }
            catch (ServiceConfigurationError e) {
                failures++;
                found.add(new Found(null, "provider could not be loaded: " + ExternalPlugins.describe(e), kind));
                continue;
            }
            if (onlyOwnClasses && candidate.type().getClassLoader() != loader) {
                continue; // the host's built-ins, seen through the plugin loader's parent
            }
            try {
                found.add(new Found(inContext(loader, candidate::get), null, kind));
            }
            catch (Exception | ServiceConfigurationError | LinkageError e) {
                failures++;
                found.add(new Found(null, "provider " + candidate.type().getName() + " could not be constructed: "
                        + ExternalPlugins.describe(e), kind));
            }
        }
        return found;
    }

    private static void register(Found found, String source, ClassLoader loader, String pluginId,
            Function<String, PluginSettings> settings, Map<String, PluginEntry> byId, List<PluginEntry> all,
            Map<PluginEntry, ClassLoader> loaders)
    {
        if (found.provider() == null) {
            String id = pluginId != null ? pluginId : "unknown";
            all.add(logged(PluginEntry.failed(id, found.kind(), null, source, found.failure())));
            return;
        }
        PluginEntry entry = describe(found.provider(), found.kind(), source, loader, settings);
        PluginEntry winner = byId.get(entry.id());
        if (winner != null) {
            entry = PluginEntry.failed(entry.id(), entry.kind(), entry.version(), source,
                    "duplicate id '" + entry.id() + "': " + winner.source() + " provides it too and takes precedence "
                            + "(built-ins first, then JARs in file-name order); remove or rename one of them");
        }
        else if (entry.available()) {
            byId.put(entry.id(), entry);
        }
        else {
            byId.putIfAbsent(entry.id(), entry);
        }
        all.add(logged(entry));
        loaders.put(entry, loader);
    }

    private static PluginEntry describe(HandoffProvider provider, String kind, String source, ClassLoader loader,
            Function<String, PluginSettings> settings)
    {
        String className = provider.getClass().getName();
        String id;
        String version;
        Integer spiVersion;
        String description;
        try {
            id = inContext(loader, provider::id);
            version = inContext(loader, provider::version);
            spiVersion = inContext(loader, provider::spiVersion);
            description = inContext(loader, provider::description);
        }
        catch (Exception | LinkageError e) {
            return PluginEntry.failed(className, kind, null, source, "provider " + className + " failed to describe itself: "
                    + ExternalPlugins.describe(e));
        }
        if (id == null || !ID.matcher(id).matches()) {
            return PluginEntry.failed(className, kind, version, source, "provider " + className + " has an invalid id '" + id
                    + "': ids are lower-case letters, digits and '-', starting with a letter");
        }
        if (spiVersion > Spi.VERSION) {
            return PluginEntry.failed(id, kind, version, source, "built for Handoff SPI version " + spiVersion
                    + ", this Handoff provides version " + Spi.VERSION + ": upgrade Handoff or use an older build of the plugin").withSpiVersion(spiVersion);
        }
        PluginSettings pluginSettings = settings.apply(id);
        List<String> capabilities;
        Availability availability;
        try {
            capabilities = inContext(loader, () -> provider.capabilityNames(pluginSettings));
            availability = inContext(loader, () -> provider.availability(pluginSettings));
        }
        catch (Exception | LinkageError e) {
            return PluginEntry.failed(id, kind, version, source, "its capabilities or availability probe threw "
                    + ExternalPlugins.describe(e)).withSpiVersion(spiVersion);
        }
        if (availability == null) {
            availability = Availability.unavailable("its availability probe returned nothing");
        }
        return new PluginEntry(id, kind, version, spiVersion, source, availability.available(),
                availability.reason(), capabilities, description == null ? "" : description, Optional.of(provider));
    }

    private static PluginEntry logged(PluginEntry entry)
    {
        if (entry.available()) {
            log.debug("plugin {} ({}, {}): available, capabilities {}", entry.id(), entry.kind(), entry.source(), entry.capabilities());
        }
        else if (entry.builtin()) {
            log.debug("plugin {} ({}, builtin): unavailable: {}", entry.id(), entry.kind(), entry.reason());
        }
        else {
            log.warn("plugin {} from {}: unavailable: {}", entry.id(), entry.source(), entry.reason());
        }
        return entry;
    }

    /** Runs {@code call} with {@code loader} as the thread's context class loader, as plugins expect. */
    public static <T> T inContext(ClassLoader loader, Callable<T> call)
            throws Exception
    {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        try {
            return call.call();
        }
        finally {
            thread.setContextClassLoader(previous);
        }
    }

    public List<PluginEntry> entries()
    {
        return entries;
    }

    /** The entry that owns {@code id}: the available one if any, else the first reported. */
    public Optional<PluginEntry> find(String id)
    {
        return entries.stream().filter(e -> e.id().equals(id) && e.available()).findFirst()
                .or(() -> entries.stream().filter(e -> e.id().equals(id)).findFirst());
    }

    /**
     * The available entry of kind {@code kind} ("transfer", "attention") with this id, or an
     * {@link IllegalArgumentException} that says what is wrong (missing, another kind, unavailable and why)
     * and which ids of that kind are available; {@code setting} is the configuration key that chose it.
     */
    public PluginEntry require(String id, String kind, String setting)
    {
        String noun = kind + " backend";
        PluginEntry entry = find(id).orElseThrow(() -> new IllegalArgumentException(
                "no " + noun + " '" + id + "' (" + setting + "); available: " + available(kind)));
        if (!entry.available()) {
            // A refused JAR ("unknown" kind: refused before its providers were read) or an unavailable provider: its
            // reason is what the operator needs, whatever kind it would have been.
            if (!entry.kind().equals(kind) && !entry.kind().equals("unknown")) {
                throw new IllegalArgumentException("plugin '" + id + "' (" + setting + ") is a " + entry.kind() + " plugin, not a " + noun
                        + ", and is unavailable anyway: " + entry.reason() + "; available " + noun + "s: " + available(kind));
            }
            String what = entry.builtin() ? noun + " '" + id + "' is unavailable" : noun + " '" + id + "' (" + entry.source() + ") was refused";
            throw new IllegalArgumentException(what + " (" + setting + "): " + entry.reason() + "; available " + noun + "s: " + available(kind));
        }
        if (!entry.kind().equals(kind)) {
            throw new IllegalArgumentException("plugin '" + id + "' is a " + entry.kind() + " plugin, not a " + noun + "; available: "
                    + available(kind));
        }
        return entry;
    }

    /** The ids of the available entries of one kind, for messages. */
    public String available(String kind)
    {
        return String.join(", ", entries.stream().filter(e -> e.kind().equals(kind) && e.available()).map(PluginEntry::id).toList());
    }

    /** The class loader to make current when calling into {@code entry}'s provider. */
    public ClassLoader loaderOf(PluginEntry entry)
    {
        return loaders.getOrDefault(entry, PluginRegistry.class.getClassLoader());
    }

    @Override
    public void close()
    {
        external.close();
    }
}
