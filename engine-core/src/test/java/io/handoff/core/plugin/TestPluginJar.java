package io.handoff.core.plugin;

import io.handoff.spi.HandoffProvider;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * Builds a third-party plugin JAR at test time, the way a plugin author would: Java source for one
 * provider, compiled against the SPI only (engine-core's classes), a PF4J manifest and a
 * {@code META-INF/services} file. Each defect a test needs is one builder call.
 *
 * <p>javac is reached through {@link ToolProvider} (java.base) rather than {@code javax.tools}, so the
 * test JVM needs no extra module flags: {@code handoff.core} does not read {@code java.compiler}.
 */
final class TestPluginJar
{
    private static final String PACKAGE = "com.example.handoff.test";
    private static final Map<String, Map<String, byte[]>> COMPILED = new ConcurrentHashMap<>();

    private enum Kind { TRANSFER, ATTENTION }

    private final Kind kind;
    private final String providerId;
    private String pluginId;
    private String pluginVersion = "1.0.0";
    private String requires = ">=0.1.0";
    private List<String> capabilities = List.of("SAME_HOST");
    private String availability = "Availability.AVAILABLE";
    private String spiVersion = "Spi.VERSION";
    private boolean manifestPluginId = true;
    private boolean servicesFile = true;
    private boolean constructorThrows;
    private boolean bundlesSpi;

    private TestPluginJar(Kind kind, String providerId)
    {
        this.kind = kind;
        this.providerId = requireNonNull(providerId, "providerId is null");
        this.pluginId = providerId;
    }

    /** A TransferBackendProvider with id {@code providerId}, declaring SAME_HOST and available, in a plugin of the same id. */
    static TestPluginJar transfer(String providerId)
    {
        return new TestPluginJar(Kind.TRANSFER, providerId);
    }

    /** An AttentionBackendProvider declaring GQA, F32, pages of 1..64 and DETERMINISTIC, available. */
    static TestPluginJar attention(String providerId)
    {
        return new TestPluginJar(Kind.ATTENTION, providerId);
    }

    /** A file named like a JAR that is not a zip file. */
    static Path corrupt(Path folder, String fileName)
    {
        Path jar = folder.resolve(fileName);
        try {
            Files.writeString(jar, "this is not a zip file\n");
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return jar;
    }

    TestPluginJar pluginId(String id)
    {
        this.pluginId = id;
        return this;
    }

    TestPluginJar requires(String constraint)
    {
        this.requires = constraint;
        return this;
    }

    /** Transfer capabilities by {@code TransferCapability} name. */
    TestPluginJar capabilities(String... names)
    {
        this.capabilities = List.of(names);
        return this;
    }

    /** A Java expression of type {@code Availability}; the generated class offers {@code canLoad(String className)}. */
    TestPluginJar availability(String expression)
    {
        this.availability = expression;
        return this;
    }

    TestPluginJar availabilityThrows()
    {
        return availability("fail(\"probe exploded\")");
    }

    TestPluginJar spiVersion(int version)
    {
        this.spiVersion = Integer.toString(version);
        return this;
    }

    TestPluginJar withoutPluginId()
    {
        this.manifestPluginId = false;
        return this;
    }

    TestPluginJar withoutServicesFile()
    {
        this.servicesFile = false;
        return this;
    }

    TestPluginJar constructorThrows()
    {
        this.constructorThrows = true;
        return this;
    }

    /** Bundles a copy of {@code io/handoff/spi/Spi.class}: what a plugin built without scope provided does. */
    TestPluginJar bundlingSpi()
    {
        this.bundlesSpi = true;
        return this;
    }

    String className()
    {
        return PACKAGE + ".Provider_" + providerId.replaceAll("[^A-Za-z0-9]", "_");
    }

    Path writeTo(Path folder, String fileName)
    {
        Path jar = folder.resolve(fileName);
        Manifest manifest = new Manifest();
        Attributes main = manifest.getMainAttributes();
        main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        if (manifestPluginId) {
            main.putValue("Plugin-Id", pluginId);
        }
        main.putValue("Plugin-Version", pluginVersion);
        main.putValue("Plugin-Requires", requires);
        main.put(Attributes.Name.IMPLEMENTATION_VERSION, pluginVersion);
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest)) {
            for (Map.Entry<String, byte[]> entry : compile(source()).entrySet()) {
                put(out, entry.getKey(), entry.getValue());
            }
            if (servicesFile) {
                String service = kind == Kind.TRANSFER
                        ? "io.handoff.spi.transfer.TransferBackendProvider"
                        : "io.handoff.spi.attention.AttentionBackendProvider";
                put(out, "META-INF/services/" + service, (className() + "\n").getBytes(StandardCharsets.UTF_8));
            }
            if (bundlesSpi) {
                // From the SPI's module, whether that is a class folder (in the reactor) or a JAR (built alone).
                try (var in = io.handoff.spi.Spi.class.getResourceAsStream("Spi.class")) {
                    put(out, "io/handoff/spi/Spi.class", in.readAllBytes());
                }
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return jar;
    }

    private static void put(JarOutputStream out, String name, byte[] bytes)
            throws IOException
    {
        out.putNextEntry(new JarEntry(name));
        out.write(bytes);
        out.closeEntry();
    }

    private String source()
    {
        String simpleName = className().substring(PACKAGE.length() + 1);
        String service = kind == Kind.TRANSFER ? "TransferBackendProvider" : "AttentionBackendProvider";
        String capabilityMethod = kind == Kind.TRANSFER
                ? """
                    public Set<TransferCapability> capabilities(PluginSettings settings)
                    {
                        Set<TransferCapability> set = EnumSet.noneOf(TransferCapability.class);
                        for (String name : new String[] {%s}) {
                            set.add(TransferCapability.valueOf(name));
                        }
                        return set;
                    }
                """.formatted(String.join(", ", capabilities.stream().map(c -> '"' + c + '"').toList()))
                : """
                    public AttentionCapabilities capabilities(PluginSettings settings)
                    {
                        return new AttentionCapabilities(Set.of(KvLayout.GQA), 1, 64, Set.of(KvDtype.F32), false, true);
                    }

                    public AttentionBackend create(AttentionGeometry geometry, KvCacheView kv, PluginSettings settings)
                    {
                        throw new UnsupportedOperationException("a test plugin has no kernels");
                    }
                """;
        return """
                package %s;

                import io.handoff.spi.*;
                import io.handoff.spi.attention.*;
                import io.handoff.spi.transfer.*;
                import java.util.*;

                public final class %s implements %s
                {
                    public %s()
                    {
                        if (%s) {
                            throw new IllegalStateException("constructor exploded");
                        }
                    }

                    public String id() { return "%s"; }

                    public int spiVersion() { return %s; }

                    public String description() { return "test plugin %s"; }

                    public Availability availability(PluginSettings settings) { return %s; }

                %s
                    static boolean canLoad(String name)
                    {
                        try {
                            Class.forName(name, false, %s.class.getClassLoader());
                            return true;
                        }
                        catch (ClassNotFoundException e) {
                            return false;
                        }
                    }

                    static Availability fail(String message)
                    {
                        throw new IllegalStateException(message);
                    }
                }
                """.formatted(PACKAGE, simpleName, service, simpleName, constructorThrows, providerId, spiVersion,
                providerId, availability, capabilityMethod, simpleName);
    }

    /** Compiles one source file against the SPI; class file bytes by JAR entry name. Cached by source text. */
    private Map<String, byte[]> compile(String source)
    {
        return COMPILED.computeIfAbsent(source, text -> {
            try {
                Path work = Files.createTempDirectory("handoff-test-plugin");
                Path sourceFile = work.resolve("src").resolve(className().replace('.', '/') + ".java");
                Files.createDirectories(sourceFile.getParent());
                Files.writeString(sourceFile, text);
                Path classes = work.resolve("classes");
                ToolProvider javac = ToolProvider.findFirst("javac").orElseThrow(() -> new IllegalStateException(
                        "no javac in this JVM: the plugin tests need a JDK, not a JRE"));
                StringWriter messages = new StringWriter();
                int rc = javac.run(new PrintWriter(messages), new PrintWriter(messages),
                        "--release", Integer.toString(Runtime.version().feature()), "-proc:none", "-implicit:none",
                        "-classpath", spiClasses().toString(), "-d", classes.toString(), sourceFile.toString());
                if (rc != 0) {
                    throw new IllegalStateException("test plugin did not compile:\n" + messages + "\n" + text);
                }
                Map<String, byte[]> files = new TreeMap<>();
                try (Stream<Path> walk = Files.walk(classes)) {
                    for (Path file : walk.filter(Files::isRegularFile).toList()) {
                        files.put(classes.relativize(file).toString().replace('\\', '/'), Files.readAllBytes(file));
                    }
                }
                deleteRecursively(work);
                return files;
            }
            catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** Where the SPI's classes are: engine-core's class folder (or JAR), the only thing a plugin compiles against. */
    private static Path spiClasses()
    {
        try {
            return Path.of(HandoffProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        }
        catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void deleteRecursively(Path root)
            throws IOException
    {
        try (Stream<Path> walk = Files.walk(root)) {
            List<Path> paths = new ArrayList<>(walk.toList());
            for (Path path : paths.reversed()) {
                Files.delete(path);
            }
        }
    }
}
