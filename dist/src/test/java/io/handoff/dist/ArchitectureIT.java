package io.handoff.dist;

import io.handoff.core.runtime.Engine;
import io.handoff.spi.HandoffProvider;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The module map, checked on the built JARs: the SPI depends on nothing but java.base, and the engine core depends on no
 * front end (HTTP API, router, CLI, demo) and on no HTTP server, JSON or CLI library. The module descriptors say so,
 * and so does every class: each type a class file names is looked up in its constant pool.
 */
class ArchitectureIT
{
    private static final Set<String> FRONT_END_MODULES = Set.of("handoff.http", "handoff.http.base", "handoff.router", "handoff.cli", "handoff.tools", "com.fasterxml.jackson.databind",
            "com.fasterxml.jackson.core", "info.picocli", "jdk.httpserver", "java.net.http");

    @Test
    void theSpiModuleRequiresOnlyTheJdk()
            throws Exception
    {
        ModuleDescriptor spi = descriptor(HandoffProvider.class);
        assertThat(spi.name()).isEqualTo("handoff.spi");
        assertThat(spi.requires().stream().map(ModuleDescriptor.Requires::name)).containsExactly("java.base");
        assertThat(spi.packages()).allSatisfy(name -> assertThat(name).startsWith("io.handoff.spi"));
    }

    @Test
    void noSpiClassNamesATypeOutsideTheJdkAndTheSpi()
            throws Exception
    {
        Set<String> foreign = referencedTypes(HandoffProvider.class, type -> !type.startsWith("java/") && !type.startsWith("io/handoff/spi/"));
        assertThat(foreign).as("types outside java.* and io.handoff.spi.* named by SPI classes").isEmpty();
    }

    @Test
    void theEngineCoreRequiresNoFrontEndModule()
            throws Exception
    {
        ModuleDescriptor core = descriptor(Engine.class);
        assertThat(core.name()).isEqualTo("handoff.core");
        assertThat(core.requires().stream().map(ModuleDescriptor.Requires::name).filter(FRONT_END_MODULES::contains)).isEmpty();
    }

    @Test
    void noEngineCoreClassNamesAFrontEndType()
            throws Exception
    {
        List<String> frontEnd = List.of("io/handoff/http/", "io/handoff/router/", "io/handoff/cli/", "io/handoff/tools/", "io/handoff/bench/", "io/handoff/demo/", "com/fasterxml/",
                "picocli/", "com/sun/net/httpserver/", "java/net/http/");
        Set<String> found = referencedTypes(Engine.class, type -> frontEnd.stream().anyMatch(type::startsWith));
        assertThat(found).as("front-end types named by engine-core classes").isEmpty();
    }

    private static ModuleDescriptor descriptor(Class<?> member)
            throws URISyntaxException
    {
        ModuleReference reference = ModuleFinder.of(jarOf(member)).findAll().iterator().next();
        return reference.descriptor();
    }

    /** The types (internal names) that the classes of {@code member}'s JAR name, filtered. */
    private static Set<String> referencedTypes(Class<?> member, Predicate<String> wanted)
            throws IOException, URISyntaxException
    {
        Set<String> found = new TreeSet<>();
        List<String> classes = new ArrayList<>();
        try (JarFile jar = new JarFile(jarOf(member).toFile())) {
            jar.stream().filter(e -> e.getName().endsWith(".class") && !e.getName().equals("module-info.class")).forEach(entry -> {
                try (var in = jar.getInputStream(entry)) {
                    ClassModel model = ClassFile.of().parse(in.readAllBytes());
                    classes.add(model.thisClass().asInternalName());
                    model.constantPool().forEach(pool -> {
                        if (pool instanceof ClassEntry type) {
                            String name = type.asInternalName().replaceFirst("^\\[+L?", "").replaceFirst(";$", "");
                            // a primitive array names no type of anyone's ("[I" is left as "I")
                            if (name.contains("/") && wanted.test(name)) {
                                found.add(model.thisClass().asInternalName() + " -> " + name);
                            }
                        }
                    });
                }
                catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }
        assertThat(classes).as("classes read from " + jarOf(member)).isNotEmpty();
        return found.stream().collect(Collectors.toCollection(TreeSet::new));
    }

    private static Path jarOf(Class<?> member)
            throws URISyntaxException
    {
        Path path = Path.of(member.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertThat(path.toString()).as("the reactor's JAR of " + member.getName()).endsWith(".jar");
        return path;
    }
}
