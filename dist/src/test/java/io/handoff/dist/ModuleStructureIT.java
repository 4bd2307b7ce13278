package io.handoff.dist;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The house rules, checked on the class files of the distribution's own modules (lib/handoff-*.jar): no import cycle
 * between packages, no package of more than 30 top-level classes, and no module that requires a module it does not
 * use. Types named in a class file's constant pool are what a class uses; a new cycle, an oversized package or a stale
 * {@code requires} fails here with its names.
 */
class ModuleStructureIT
{
    private static final int MAX_TOP_LEVEL_CLASSES = 30;

    /** Package (dotted) to the packages its classes name, for every package of the distribution's own modules. */
    private static final Map<String, Set<String>> PACKAGE_EDGES = new TreeMap<>();
    /** Package to its top-level class count. */
    private static final Map<String, Integer> CLASSES = new TreeMap<>();
    /** Module name to the packages its classes name. */
    private static final Map<String, Set<String>> MODULE_USES = new TreeMap<>();
    private static final Map<String, ModuleDescriptor> DESCRIPTORS = new TreeMap<>();

    @BeforeAll
    static void readClassFiles()
            throws IOException
    {
        List<Path> jars;
        try (Stream<Path> files = Files.list(Launcher.DIST.resolve("lib"))) {
            jars = files.filter(p -> p.getFileName().toString().startsWith("handoff-")).sorted().toList();
        }
        assertThat(jars).as("the distribution's own modules in " + Launcher.DIST.resolve("lib")).hasSizeGreaterThan(8);
        for (Path jar : jars) {
            ModuleReference reference = ModuleFinder.of(jar).findAll().iterator().next();
            ModuleDescriptor descriptor = reference.descriptor();
            DESCRIPTORS.put(descriptor.name(), descriptor);
            Set<String> uses = MODULE_USES.computeIfAbsent(descriptor.name(), name -> new TreeSet<>());
            try (JarFile file = new JarFile(jar.toFile())) {
                file.stream().filter(e -> e.getName().endsWith(".class") && !e.getName().endsWith("module-info.class")).forEach(entry -> {
                    try (var in = file.getInputStream(entry)) {
                        ClassModel model = ClassFile.of().parse(in.readAllBytes());
                        String self = model.thisClass().asInternalName();
                        String pkg = packageOf(self);
                        if (!self.contains("$")) {
                            CLASSES.merge(pkg, 1, Integer::sum);
                        }
                        Set<String> edges = PACKAGE_EDGES.computeIfAbsent(pkg, p -> new TreeSet<>());
                        model.constantPool().forEach(entry2 -> {
                            if (entry2 instanceof ClassEntry type) {
                                String name = type.asInternalName().replaceFirst("^\\[+L?", "").replaceFirst(";$", "");
                                if (name.contains("/")) {
                                    String target = packageOf(name);
                                    uses.add(target);
                                    if (!target.equals(pkg)) {
                                        edges.add(target);
                                    }
                                }
                            }
                        });
                    }
                    catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            }
        }
    }

    @Test
    void noPackageCycle()
    {
        assertThat(cycles()).as("package cycles in the distribution's own modules").isEmpty();
    }

    @Test
    void noPackageOverThirtyClasses()
    {
        Map<String, Integer> oversized = new TreeMap<>();
        CLASSES.forEach((pkg, count) -> {
            if (count > MAX_TOP_LEVEL_CLASSES) {
                oversized.put(pkg, count);
            }
        });
        assertThat(oversized).as("packages of more than " + MAX_TOP_LEVEL_CLASSES + " top-level classes").isEmpty();
    }

    @Test
    void everyModuleUsesWhatItRequires()
    {
        Map<String, String> owner = new HashMap<>();
        ModuleFinder.ofSystem().findAll().forEach(m -> m.descriptor().packages().forEach(p -> owner.put(p, m.descriptor().name())));
        DESCRIPTORS.values().forEach(d -> d.packages().forEach(p -> owner.put(p, d.name())));
        // Third-party modules: their name, and the package prefix that is theirs.
        Map<String, String> thirdParty = Map.of("com.fasterxml.jackson.databind", "com.fasterxml.jackson.databind", "info.picocli", "picocli",
                "typesafe.config", "com.typesafe.config", "org.apache.logging.log4j", "org.apache.logging.log4j",
                "org.apache.logging.log4j.core", "org.apache.logging.log4j.core", "org.pf4j", "org.pf4j", "org.slf4j", "org.slf4j");
        List<String> unused = new ArrayList<>();
        DESCRIPTORS.forEach((name, descriptor) -> {
            Set<String> used = MODULE_USES.get(name);
            for (ModuleDescriptor.Requires requires : descriptor.requires()) {
                String required = requires.name();
                if (required.equals("java.base") || requires.modifiers().contains(ModuleDescriptor.Requires.Modifier.MANDATED)) {
                    continue;
                }
                boolean uses = thirdParty.containsKey(required)
                        ? used.stream().anyMatch(p -> p.equals(thirdParty.get(required)) || p.startsWith(thirdParty.get(required) + "."))
                        : used.stream().anyMatch(p -> required.equals(owner.get(p)));
                if (!uses && !requiredForItsServices(descriptor, required)) {
                    unused.add(name + " requires " + required);
                }
            }
        });
        assertThat(unused).as("modules that require a module none of their classes uses").isEmpty();
    }

    @Test
    void theRouterAndTheSharedModulesNeedNoEngine()
    {
        // The router, the HTTP base and the request trace stand beside the engine core, never on it.
        for (String module : List.of("handoff.router", "handoff.http.base", "handoff.trace", "handoff.cluster", "handoff.math")) {
            assertThat(DESCRIPTORS).as("modules in lib/").containsKey(module);
            assertThat(DESCRIPTORS.get(module).requires().stream().map(ModuleDescriptor.Requires::name))
                    .as(module + " requires").doesNotContain("handoff.core", "handoff.http", "handoff.cli", "handoff.tools");
        }
        assertThat(DESCRIPTORS.get("handoff.trace").requires().stream().map(ModuleDescriptor.Requires::name)).containsExactly("java.base");
    }

    /** A module may require another only to load its services (the core's plugin discovery). */
    private static boolean requiredForItsServices(ModuleDescriptor descriptor, String required)
    {
        ModuleDescriptor other = DESCRIPTORS.get(required);
        return other != null && descriptor.uses().stream().anyMatch(service -> other.packages().contains(service.substring(0, service.lastIndexOf('.'))));
    }

    /** The strongly connected sets of more than one package (Tarjan). */
    private static List<Set<String>> cycles()
    {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new TreeSet<>();
        List<Set<String>> found = new ArrayList<>();
        int[] counter = {0};
        for (String pkg : PACKAGE_EDGES.keySet()) {
            if (!index.containsKey(pkg)) {
                strongConnect(pkg, index, low, stack, onStack, found, counter);
            }
        }
        return found;
    }

    private static void strongConnect(String v, Map<String, Integer> index, Map<String, Integer> low, Deque<String> stack, Set<String> onStack,
            List<Set<String>> found, int[] counter)
    {
        index.put(v, counter[0]);
        low.put(v, counter[0]);
        counter[0]++;
        stack.push(v);
        onStack.add(v);
        for (String w : PACKAGE_EDGES.getOrDefault(v, Set.of())) {
            if (!PACKAGE_EDGES.containsKey(w)) {
                continue; // not one of ours
            }
            if (!index.containsKey(w)) {
                strongConnect(w, index, low, stack, onStack, found, counter);
                low.put(v, Math.min(low.get(v), low.get(w)));
            }
            else if (onStack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                onStack.remove(w);
                component.add(w);
            }
            while (!w.equals(v));
            if (component.size() > 1) {
                found.add(component);
            }
        }
    }

    private static String packageOf(String internalName)
    {
        int slash = internalName.lastIndexOf('/');
        return slash < 0 ? "" : internalName.substring(0, slash).replace('/', '.');
    }
}
