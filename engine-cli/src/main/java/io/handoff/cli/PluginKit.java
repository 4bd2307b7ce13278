package io.handoff.cli;

import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import javax.xml.parsers.DocumentBuilderFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static java.util.Objects.requireNonNull;

/**
 * The distribution's plugin kit, {@code sdk/}: for each artifact a standalone POM ({@code <artifactId>-<version>.pom})
 * and beside it its jar and, where built, its {@code -sources.jar} and {@code -javadoc.jar}. Installing copies them
 * into a Maven repository's layout, {@code <groupId as folders>/<artifactId>/<version>/}, which is all Maven needs to
 * resolve them from a local repository.
 */
final class PluginKit
{
    private static final List<String> ATTACHED = List.of(".jar", "-sources.jar", "-javadoc.jar");

    /** One artifact as installed: its coordinates, the folder it went to, and the file names written there. */
    record Installed(String coordinates, Path directory, List<String> files) {}

    private record Artifact(String groupId, String artifactId, String version, Path pom) {}

    private final Path home;

    private PluginKit(Path home)
    {
        this.home = requireNonNull(home, "home is null");
    }

    static PluginKit in(Path home)
    {
        return new PluginKit(home);
    }

    Path folder()
    {
        return home.resolve("sdk");
    }

    List<Installed> install(Path repository)
    {
        List<Artifact> artifacts = artifacts();
        Path target = repository.toAbsolutePath().normalize();
        try {
            Files.createDirectories(target);
        }
        catch (IOException e) {
            throw unwritable(target, e);
        }
        if (!Files.isWritable(target)) {
            throw new IllegalArgumentException("cannot install the plugin kit into " + target + ": the folder is not writable; "
                    + "choose another with --maven-repo DIR");
        }
        List<Installed> installed = new ArrayList<>();
        for (Artifact artifact : artifacts) {
            Path directory = target;
            for (String part : artifact.groupId().split("\\.")) {
                directory = directory.resolve(part);
            }
            directory = directory.resolve(artifact.artifactId()).resolve(artifact.version());
            String base = artifact.artifactId() + "-" + artifact.version();
            List<String> files = new ArrayList<>();
            try {
                Files.createDirectories(directory);
                copy(artifact.pom(), directory.resolve(base + ".pom"));
                files.add(base + ".pom");
                for (String suffix : ATTACHED) {
                    Path file = artifact.pom().resolveSibling(base + suffix);
                    if (Files.isRegularFile(file)) {
                        copy(file, directory.resolve(base + suffix));
                        files.add(base + suffix);
                    }
                }
            }
            catch (IOException e) {
                throw unwritable(target, e);
            }
            installed.add(new Installed(artifact.groupId() + ":" + artifact.artifactId() + ":" + artifact.version(), directory, files));
        }
        return installed;
    }

    private List<Artifact> artifacts()
    {
        Path folder = folder();
        if (!Files.isDirectory(folder)) {
            throw new IllegalStateException("no plugin kit at " + folder + ": `handoff sdk` works from an unpacked Handoff distribution "
                    + "(its bin/handoff); in a source tree, run `make dist` and use dist/target/handoff/bin/handoff");
        }
        List<Path> poms;
        try (Stream<Path> files = Files.list(folder)) {
            poms = files.filter(p -> p.getFileName().toString().endsWith(".pom")).sorted().toList();
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the plugin kit at " + folder + ": " + e.getMessage(), e);
        }
        if (poms.isEmpty()) {
            throw new IllegalStateException("the plugin kit at " + folder + " holds no POM (*.pom): this distribution is incomplete; "
                    + "unpack the Handoff tarball again");
        }
        List<Artifact> artifacts = new ArrayList<>();
        for (Path pom : poms) {
            Artifact artifact = read(pom);
            Path jar = pom.resolveSibling(artifact.artifactId() + "-" + artifact.version() + ".jar");
            if (!pom.getFileName().toString().equals(artifact.artifactId() + "-" + artifact.version() + ".pom") || !Files.isRegularFile(jar)) {
                throw new IllegalStateException("the plugin kit at " + folder + " is incomplete: " + pom.getFileName() + " describes "
                        + artifact.artifactId() + " " + artifact.version() + " but " + jar.getFileName() + " is not beside it; "
                        + "unpack the Handoff tarball again");
            }
            artifacts.add(artifact);
        }
        return artifacts;
    }

    private static Artifact read(Path pom)
    {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setNamespaceAware(true);
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            Document document = factory.newDocumentBuilder().parse(pom.toFile());
            Element project = document.getDocumentElement();
            String groupId = child(project, "groupId");
            String artifactId = child(project, "artifactId");
            String version = child(project, "version");
            if (groupId == null || artifactId == null || version == null) {
                throw new IllegalStateException(pom + " is not a standalone POM: it must name its own groupId, artifactId and version");
            }
            return new Artifact(groupId, artifactId, version, pom);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + pom + ": " + e.getMessage(), e);
        }
        catch (IllegalStateException e) {
            throw e;
        }
        catch (Exception e) {
            throw new IllegalStateException(pom + " is not a readable POM (" + e.getMessage() + "): unpack the Handoff tarball again", e);
        }
    }

    private static String child(Element parent, String name)
    {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && name.equals(element.getLocalName())) {
                return element.getTextContent().strip();
            }
        }
        return null;
    }

    private static void copy(Path from, Path to)
            throws IOException
    {
        Path partial = to.resolveSibling(to.getFileName() + ".part");
        Files.copy(from, partial, StandardCopyOption.REPLACE_EXISTING);
        Files.move(partial, to, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static UncheckedIOException unwritable(Path repository, IOException e)
    {
        String why = e instanceof AccessDeniedException ? "permission denied on " + e.getMessage() : e.toString();
        return new UncheckedIOException("cannot install the plugin kit into " + repository + ": " + why
                + "; choose a writable folder with --maven-repo DIR", e);
    }
}
