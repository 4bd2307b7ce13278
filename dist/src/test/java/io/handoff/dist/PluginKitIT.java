package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.handoff.dist.Launcher.VERSION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A plugin author's path from the tarball alone: unpack it, {@code sdk install} into a fresh Maven repository,
 * {@code sdk new-plugin}, {@code mvn verify} the generated project (for transfer, that runs the SPI contract tests
 * against the generated backend), drop the JAR into plugins/ and see it listed as an available JAR plugin. Needs
 * {@code mvn} on PATH and Maven Central for the generated project's Maven plugins and test dependencies.
 */
class PluginKitIT
{
    private static final Path TARBALL = Path.of(System.getProperty("handoff.dist.tarball", "target/handoff-" + VERSION + "-bin.tar.gz"));

    @TempDir
    static Path temp;

    private static Path home;
    private static Path repository;

    @BeforeAll
    static void unpackAndInstallTheKit()
            throws Exception
    {
        assumeTrue(onPath("mvn"), "mvn is not on PATH: the plugin kit ITs build a generated plugin project with Maven; install Maven to run them");
        Path unpacked = Files.createDirectories(temp.resolve("unpacked"));
        Process tar = new ProcessBuilder("tar", "-xzf", TARBALL.toString(), "-C", unpacked.toString()).inheritIO().start();
        assertThat(tar.waitFor(2, TimeUnit.MINUTES) && tar.exitValue() == 0).as("tar -xzf %s", TARBALL).isTrue();
        home = unpacked.resolve("handoff-" + VERSION);
        repository = temp.resolve("m2");
        Launcher.Run install = Launcher.run(temp, home, "sdk", "install", "--maven-repo", repository.toString());
        assertThat(install.exitCode()).as(install.describe()).isZero();
        assertThat(install.stdout()).contains("io.handoff:handoff-spi:" + VERSION, "io.handoff:handoff-transfer-testkit:" + VERSION,
                "io.handoff:handoff-engine-core:" + VERSION);
        assertThat(repository.resolve("io/handoff/handoff-spi/" + VERSION + "/handoff-spi-" + VERSION + "-javadoc.jar")).isRegularFile();
    }

    @Test
    void aGeneratedTransferPluginPassesTheContractTestsAndLoads()
            throws Exception
    {
        buildAndLoad("kit-probe", "transfer");
    }

    @Test
    void aGeneratedAttentionPluginBuildsAndLoads()
            throws Exception
    {
        buildAndLoad("kit-attention", "attention");
    }

    private static void buildAndLoad(String id, String kind)
            throws Exception
    {
        Path project = temp.resolve(id);
        Launcher.Run generate = Launcher.run(temp, home, "sdk", "new-plugin", "--id", id, "--kind", kind, project.toString());
        assertThat(generate.exitCode()).as(generate.describe()).isZero();
        assertThat(Files.readString(project.resolve("pom.xml"))).doesNotContain("<parent>");

        Path log = temp.resolve(id + "-mvn.log");
        ProcessBuilder maven = new ProcessBuilder("mvn", "-B", "-ntp", "-Dmaven.repo.local=" + repository, "verify")
                .directory(project.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        maven.environment().put("JAVA_HOME", System.getProperty("java.home")); // the plugin compiles for the engine's Java release
        Process mvn = maven.start();
        boolean done = mvn.waitFor(10, TimeUnit.MINUTES);
        String output = Files.readString(log);
        assertThat(done && mvn.exitValue() == 0).as("mvn verify of the generated %s plugin:\n%s", kind, output).isTrue();
        assertThat(output).contains("Tests run:").doesNotContain("Tests run: 0,");

        Path jar = project.resolve("target/" + id + "-0.1.0-SNAPSHOT.jar");
        assertThat(jar).isRegularFile();
        Path dist = temp.resolve(id + "-dist");
        copyTree(home, dist);
        Files.copy(jar, dist.resolve("plugins").resolve(jar.getFileName()));
        Launcher.Run plugins = Launcher.run(temp, dist, "plugins", "--json");
        assertThat(plugins.exitCode()).as(plugins.describe()).isZero();
        JsonNode entry = null;
        for (JsonNode node : new ObjectMapper().readTree(plugins.stdout())) {
            if (node.get("id").asText().equals(id)) {
                entry = node;
            }
        }
        assertThat(entry).as("%s in plugins --json:\n%s", id, plugins.stdout()).isNotNull();
        assertThat(entry.get("source").asText()).endsWith(jar.getFileName().toString());
        assertThat(entry.get("kind").asText()).isEqualTo(kind);
        assertThat(entry.get("available").asBoolean()).as(entry.toString()).isTrue();
    }

    private static boolean onPath(String command)
    {
        String path = System.getenv("PATH");
        return path != null && Stream.of(path.split(java.io.File.pathSeparator)).anyMatch(dir -> Files.isExecutable(Path.of(dir, command)));
    }

    private static void copyTree(Path from, Path to)
            throws IOException
    {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path path : (Iterable<Path>) paths::iterator) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                }
                else {
                    Files.copy(path, target, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }
}
