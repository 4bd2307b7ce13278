package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the built distribution ({@code target/handoff/bin/handoff}) as a user would, each command in its
 * own process: exit codes, the plugin report, third-party JARs dropped into {@code plugins/}, and
 * configuration warnings and errors.
 */
class DistributionIT
{
    private static final String VERSION = Launcher.VERSION;
    private static final Path DIST = Launcher.DIST;
    private static final Path TARBALL = Path.of(System.getProperty("handoff.dist.tarball", "target/handoff-" + VERSION + "-bin.tar.gz"));
    private static final Path EXAMPLE_PLUGIN = Path.of(System.getProperty("handoff.example.plugin",
            "../examples/plugin-example/target/handoff-plugin-example-" + VERSION + ".jar"));
    private static final Map<String, String> BUILT_IN_KINDS = Map.of(
            "mooncake", "transfer", "mori", "transfer", "nixl", "transfer", "triton", "attention", "aiter", "attention");
    private static final List<String> CONTRACT_FIELDS =
            List.of("id", "kind", "version", "spiVersion", "source", "available", "reason", "capabilities", "description");
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path temp;

    @Test
    void versionExitsZeroAndNamesTheVersion()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, DIST, "--version");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stdout()).startsWith("handoff " + VERSION + " (Java ");
    }

    @Test
    void pluginsJsonListsTheFiveBuiltInsWithEveryContractField()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, DIST, "plugins", "--json");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        List<JsonNode> entries = entries(run.stdout());
        assertThat(entries).extracting(e -> e.get("id").asText()).containsExactlyInAnyOrderElementsOf(BUILT_IN_KINDS.keySet());
        for (JsonNode entry : entries) {
            String id = entry.get("id").asText();
            assertThat(fieldNames(entry)).as(id).containsExactlyInAnyOrderElementsOf(CONTRACT_FIELDS);
            assertThat(entry.get("kind").asText()).as(id).isEqualTo(BUILT_IN_KINDS.get(id));
            assertThat(entry.get("version").asText()).as(id).isEqualTo(VERSION);
            assertThat(entry.get("spiVersion").asInt()).as(id).isEqualTo(2);
            assertThat(entry.get("source").asText()).as(id).isEqualTo("builtin");
            assertThat(entry.get("capabilities").isArray()).as(id).isTrue();
            assertThat(entry.get("capabilities")).as(id).isNotEmpty();
            assertAvailabilityIsExplained(entry);
        }
    }

    @Test
    void droppedPluginJarIsListedWithItsPathAndACorruptJarWithItsReason()
            throws Exception
    {
        Path home = copyOfDistribution();
        Path example = Files.copy(EXAMPLE_PLUGIN, home.resolve("plugins").resolve(EXAMPLE_PLUGIN.getFileName()));
        Path broken = Files.writeString(home.resolve("plugins/broken-plugin.jar"), "not a zip file\n");

        Launcher.Run run = Launcher.run(temp, home, "plugins", "--json");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        List<JsonNode> entries = entries(run.stdout());
        assertThat(entries).extracting(e -> e.get("id").asText())
                .containsExactlyInAnyOrder("mooncake", "mori", "nixl", "triton", "aiter", "example-loopback", "broken-plugin");
        entries.forEach(entry -> assertThat(fieldNames(entry)).containsExactlyInAnyOrderElementsOf(CONTRACT_FIELDS));

        JsonNode loopback = entry(entries, "example-loopback");
        assertThat(Path.of(loopback.get("source").asText()).toRealPath()).isEqualTo(example.toRealPath());
        assertThat(loopback.get("kind").asText()).isEqualTo("transfer");
        assertThat(loopback.get("version").asText()).isEqualTo(VERSION);
        assertThat(loopback.get("available").asBoolean()).isTrue();
        assertThat(loopback.get("reason").isNull()).isTrue();
        assertThat(loopback.get("capabilities")).extracting(JsonNode::asText).containsExactly("SAME_HOST");

        JsonNode corrupt = entry(entries, "broken-plugin");
        assertThat(Path.of(corrupt.get("source").asText()).toRealPath()).isEqualTo(broken.toRealPath());
        assertThat(corrupt.get("available").asBoolean()).isFalse();
        assertThat(corrupt.get("reason").asText()).contains("not a valid JAR");
        assertThat(run.stderr()).contains("skipping plugin JAR", "broken-plugin.jar");

        assertThat(entries).filteredOn(e -> BUILT_IN_KINDS.containsKey(e.get("id").asText()))
                .allSatisfy(e -> assertThat(e.get("source").asText()).isEqualTo("builtin"));
    }

    @Test
    void pluginsTableHasOneAlignedRowPerPlugin()
            throws Exception
    {
        Path home = copyOfDistribution();
        Files.copy(EXAMPLE_PLUGIN, home.resolve("plugins").resolve(EXAMPLE_PLUGIN.getFileName()));
        Files.writeString(home.resolve("plugins/broken-plugin.jar"), "not a zip file\n");

        Launcher.Run run = Launcher.run(temp, home, "plugins");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        List<String> lines = run.stdout().lines().toList();
        assertThat(lines).hasSize(8);
        String header = lines.getFirst();
        assertThat(header.split("\\s+")).startsWith("ID", "KIND", "VERSION", "SPI", "SOURCE", "AVAILABLE");
        int available = header.indexOf("AVAILABLE");
        for (String row : lines.subList(1, lines.size())) {
            assertThat(row.substring(available)).as(row).matches("(yes|no) +\\S.*");
        }
        assertThat(lines).anySatisfy(row -> assertThat(row).startsWith("example-loopback ").contains("handoff-plugin-example-" + VERSION + ".jar", "yes", "SAME_HOST"));
        assertThat(lines).anySatisfy(row -> assertThat(row).startsWith("broken-plugin ").contains("not a valid JAR"));
        assertThat(lines).anySatisfy(row -> assertThat(row).startsWith("nixl ").contains("builtin"));
    }

    @Test
    void pluginDirSettingPointsTheEngineAtAnotherFolder()
            throws Exception
    {
        Path folder = Files.createDirectory(temp.resolve("elsewhere"));
        Path example = Files.copy(EXAMPLE_PLUGIN, folder.resolve("loopback.jar"));

        Launcher.Run run = Launcher.run(temp, DIST, "plugins", "--json", "-Dhandoff.plugin-dir=" + folder);

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode loopback = entry(entries(run.stdout()), "example-loopback");
        assertThat(Path.of(loopback.get("source").asText()).toRealPath()).isEqualTo(example.toRealPath());
    }

    @Test
    void configWarnsNamingATypoedKeyAndTheKeyItMeant()
            throws Exception
    {
        Path typo = Files.writeString(temp.resolve("typo.conf"), "handoff.logging.levle = debug\n");

        Launcher.Run run = Launcher.run(temp, DIST, "config", "--config", typo.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stderr()).contains("'handoff.logging.levle'", typo + ":1", "did you mean 'handoff.logging.level'?");
    }

    @Test
    void configPrintsEveryEffectiveValueWithItsOrigin()
            throws Exception
    {
        Path file = Files.writeString(temp.resolve("handoff.conf"), "handoff.plugins.mooncake.transport = tcp\n");

        Launcher.Run run = Launcher.run(temp, DIST, "config", "--config", file.toString(), "-Dhandoff.logging.level=warn");

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(line(run.stdout(), "handoff.logging.level ")).contains("\"warn\"", "# -D on the command line");
        assertThat(line(run.stdout(), "handoff.plugins.mooncake.transport ")).contains("\"tcp\"", "# " + file + ":1");
        assertThat(line(run.stdout(), "handoff.logging.format ")).contains("\"text\"", "# reference.conf in handoff-engine-core-" + VERSION + ".jar:");
        assertThat(line(run.stdout(), "handoff.plugins.mori.forward-sync ")).contains("true", "# reference.conf in handoff-plugin-mori-" + VERSION + ".jar:");
    }

    @Test
    void configWithAWrongTypeExitsOneNamingPathValueAndExpectedType()
            throws Exception
    {
        Path wrong = Files.writeString(temp.resolve("wrong.conf"), "handoff.plugins.mori.forward-sync = maybe\n");

        Launcher.Run run = Launcher.run(temp, DIST, "config", "--config", wrong.toString());

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stderr()).contains("handoff.plugins.mori.forward-sync = \"maybe\"", wrong + ":1", "expected a boolean (true or false)");
        assertThat(run.stdout()).isEmpty();
    }

    @Test
    void unknownSubcommandExitsTwoInAFewLines()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, DIST, "frobnicate");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(2);
        assertThat(run.stderr()).contains("'frobnicate'", "see 'handoff --help'");
        assertThat(run.stderr().lines().filter(line -> !line.contains("incubator modules"))).hasSizeLessThanOrEqualTo(3);
    }

    @Test
    void unknownOptionExitsTwoWithWhereTheCommandsHelpIs()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, DIST, "plugins", "--bogus");

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(2);
        assertThat(run.stderr()).contains("Unknown option: '--bogus'", "see 'handoff plugins --help'");
    }

    @Test
    void tarballUnpacksToARunnableDistribution()
            throws Exception
    {
        Process tar = new ProcessBuilder("tar", "-xzf", TARBALL.toString(), "-C", temp.toString()).inheritIO().start();
        assertThat(tar.waitFor(2, TimeUnit.MINUTES) && tar.exitValue() == 0).as("tar -xzf %s", TARBALL).isTrue();
        Path home = temp.resolve("handoff-" + VERSION);

        assertThat(home.resolve("bin/handoff")).isExecutable();
        assertThat(home.resolve("lib/handoff-engine-core-" + VERSION + ".jar")).isRegularFile();
        assertThat(home.resolve("conf/handoff.conf")).isRegularFile();
        assertThat(home.resolve("plugins")).isEmptyDirectory();
        Launcher.Run run = Launcher.run(temp, home, "--version");
        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stdout()).startsWith("handoff " + VERSION);
    }

    /** A private copy of the built distribution (permissions kept), so a test may drop JARs into its plugins/. */
    private Path copyOfDistribution()
            throws IOException
    {
        Path copy = temp.resolve("handoff");
        try (Stream<Path> files = Files.walk(DIST)) {
            for (Path source : files.toList()) {
                Files.copy(source, copy.resolve(DIST.relativize(source).toString()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        return copy;
    }

    private static List<JsonNode> entries(String json)
            throws IOException
    {
        JsonNode array = JSON.readTree(json);
        assertThat(array.isArray()).as("plugins --json prints a JSON array:\n%s", json).isTrue();
        return StreamSupport.stream(array.spliterator(), false).toList();
    }

    private static JsonNode entry(List<JsonNode> entries, String id)
    {
        return entries.stream().filter(e -> e.get("id").asText().equals(id)).findFirst()
                .orElseThrow(() -> new AssertionError("no plugin '" + id + "' in " + entries));
    }

    private static List<String> fieldNames(JsonNode entry)
    {
        List<String> names = new ArrayList<>();
        entry.fieldNames().forEachRemaining(names::add);
        return names;
    }

    private static void assertAvailabilityIsExplained(JsonNode entry)
    {
        String id = entry.get("id").asText();
        if (entry.get("available").asBoolean()) {
            assertThat(entry.get("reason").isNull()).as("%s is available, so it gives no reason", id).isTrue();
        }
        else {
            assertThat(entry.get("reason").asText()).as("%s is unavailable, so it says why", id).isNotBlank();
        }
    }

    private static String line(String output, String prefix)
    {
        return output.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting with '" + prefix + "' in:\n" + output));
    }
}
