package io.handoff.core.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Loading the real configuration: layers, precedence, environment variables, origins, and the real reference. */
class HandoffConfigTest
{
    @TempDir
    Path folder;

    @Test
    void unknownKeyInAFileWarnsNamingIt()
            throws IOException
    {
        Path file = write("handoff.conf", "handoff { this-key-does-not-exist = 1 }");

        HandoffConfig config = HandoffConfig.load(ConfigSource.of(file), List.of());

        assertThat(config.warnings()).singleElement().asString()
                .contains("'handoff.this-key-does-not-exist'", file.toString());
    }

    @Test
    void typoedRealKeyWarnsWithTheRealKey()
            throws IOException
    {
        Path file = write("handoff.conf", "handoff.logging.levle = debug");

        HandoffConfig config = HandoffConfig.load(ConfigSource.of(file), List.of());

        assertThat(config.warnings()).singleElement().asString()
                .contains("'handoff.logging.levle'", "did you mean 'handoff.logging.level'?");
        assertThat(config.config().getString("handoff.logging.level")).isEqualTo("info");
    }

    @Test
    void disallowedValueOfARealKeyFailsNamingPathValueAndChoices()
            throws IOException
    {
        Path file = write("handoff.conf", "handoff.logging.level = \"loud\"");

        assertThatThrownBy(() -> HandoffConfig.load(ConfigSource.of(file), List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("handoff.logging.level = \"loud\"")
                .hasMessageContaining("allowed: trace | debug | info | warn | error");
    }

    @Test
    void fileThatIsNotHoconFailsNamingTheFile()
            throws IOException
    {
        Path file = write("broken.conf", "handoff { logging = ");

        assertThatThrownBy(() -> HandoffConfig.load(ConfigSource.of(file), List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("not valid HOCON");
    }

    @Test
    void missingFileFailsNamingIt()
    {
        Path file = folder.resolve("absent.conf");

        assertThatThrownBy(() -> HandoffConfig.load(ConfigSource.of(file), List.of()))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("does not exist");
    }

    @Test
    void environmentVariableNameMapsToAPath()
    {
        assertThat(HandoffConfig.envNameToPath("handoff_kv_page__size")).isEqualTo("handoff.kv.page-size");
        assertThat(HandoffConfig.envNameToPath("handoff_plugins_acme_odd___name")).isEqualTo("handoff.plugins.acme.odd_name");
        assertThat(HandoffConfig.fromEnvironment(Map.of("CONFIG_FORCE_handoff_kv_page__size", "32", "PATH", "/usr/bin"))
                .getString("handoff.kv.page-size")).isEqualTo("32");
        assertThat(HandoffConfig.fromEnvironment(Map.of("PATH", "/usr/bin", "CONFIG_FORCE_", "x")).isEmpty()).isTrue();
    }

    @Test
    void environmentVariableSetsARealKey()
    {
        ConfigSource source = new ConfigSource(Optional.empty(), Map.of(), Map.of("CONFIG_FORCE_handoff_logging_level", "debug"));

        HandoffConfig config = HandoffConfig.load(source, List.of());

        assertThat(config.config().getString("handoff.logging.level")).isEqualTo("debug");
        assertThat(value(config, "handoff.logging.level").origin()).isEqualTo("environment variable");
    }

    @Test
    void commandLineWinsOverEnvironmentOverFileOverReference()
            throws IOException
    {
        URL reference = pluginReference();
        Path file = write("handoff.conf", """
                handoff.plugins.acme {
                  a = "file"
                  b = "file"
                  c = "file"
                }
                """);
        ConfigSource source = new ConfigSource(Optional.of(file),
                Map.of("handoff.plugins.acme.a", "command-line"),
                Map.of("CONFIG_FORCE_handoff_plugins_acme_a", "environment", "CONFIG_FORCE_handoff_plugins_acme_b", "environment"));

        HandoffConfig config = HandoffConfig.load(source, List.of(reference));

        assertThat(config.warnings()).isEmpty();
        assertThat(value(config, "handoff.plugins.acme.a").value()).isEqualTo("\"command-line\"");
        assertThat(value(config, "handoff.plugins.acme.b").value()).isEqualTo("\"environment\"");
        assertThat(value(config, "handoff.plugins.acme.c").value()).isEqualTo("\"file\"");
        assertThat(value(config, "handoff.plugins.acme.d").value()).isEqualTo("\"reference\"");
    }

    @Test
    void jvmSystemPropertyWinsOverEnvironmentButNotOverCommandLine()
            throws IOException
    {
        URL reference = pluginReference();
        ConfigSource source = new ConfigSource(Optional.empty(),
                Map.of("handoff.plugins.acme.a", "command-line"),
                Map.of("CONFIG_FORCE_handoff_plugins_acme_a", "environment", "CONFIG_FORCE_handoff_plugins_acme_b", "environment"));
        System.setProperty("handoff.plugins.acme.a", "system-property");
        System.setProperty("handoff.plugins.acme.b", "system-property");
        try {
            HandoffConfig config = HandoffConfig.load(source, List.of(reference));

            assertThat(value(config, "handoff.plugins.acme.a").value()).isEqualTo("\"command-line\"");
            assertThat(value(config, "handoff.plugins.acme.b").value()).isEqualTo("\"system-property\"");
            assertThat(value(config, "handoff.plugins.acme.b").origin()).contains("JVM system property");
        }
        finally {
            System.clearProperty("handoff.plugins.acme.a");
            System.clearProperty("handoff.plugins.acme.b");
        }
    }

    @Test
    void effectiveValuesCarryWhereEachValueCameFrom()
            throws IOException
    {
        URL reference = pluginReference();
        Path file = write("handoff.conf", "handoff.plugins.acme.c = \"file\"\n");
        ConfigSource source = new ConfigSource(Optional.of(file),
                Map.of("handoff.plugins.acme.a", "command-line"), Map.of("CONFIG_FORCE_handoff_plugins_acme_b", "environment"));

        HandoffConfig config = HandoffConfig.load(source, List.of(reference));

        assertThat(value(config, "handoff.plugins.acme.a").origin()).isEqualTo("-D on the command line");
        assertThat(value(config, "handoff.plugins.acme.b").origin()).isEqualTo("environment variable");
        assertThat(value(config, "handoff.plugins.acme.c").origin()).isEqualTo(file + ":1");
        assertThat(value(config, "handoff.plugins.acme.d").origin()).contains("acme-reference.conf");
        assertThat(value(config, "handoff.logging.level").origin()).startsWith("reference.conf");
        assertThat(value(config, "handoff.logging.level").value()).isEqualTo("\"info\"");
        assertThat(config.effectiveValues()).extracting(HandoffConfig.EffectiveValue::path).isSorted();
    }

    @Test
    void pluginReferenceBecomesPartOfTheSchema()
            throws IOException
    {
        URL reference = pluginReference();
        Path file = write("handoff.conf", "handoff.plugins.acme.mode = fast\n");

        assertThatThrownBy(() -> HandoffConfig.load(ConfigSource.of(file), List.of(reference)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("handoff.plugins.acme.mode = \"fast\"")
                .hasMessageContaining("allowed: safe | quick");
    }

    @Test
    void pluginSettingsReadThePluginsSubtree()
            throws IOException
    {
        URL reference = pluginReference();
        ConfigSource source = new ConfigSource(Optional.empty(), Map.of("handoff.plugins.acme.mode", "quick"), Map.of());

        HandoffConfig config = HandoffConfig.load(source, List.of(reference));

        assertThat(config.pluginSettings("acme").getString("mode")).isEqualTo("quick");
        assertThat(config.pluginSettings("acme").getString("d")).isEqualTo("reference");
        assertThatThrownBy(() -> config.pluginSettings("acme").getString("missing"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("handoff.plugins.acme.missing");
        assertThat(config.pluginSettings("other").hasPath("mode")).isFalse();
    }

    @Test
    void aKeyTheReferenceMarksSecretIsPrintedRedactedUnlessEmptyAndSoIsItsValidationError()
            throws IOException
    {
        URL reference = write("vault-reference.conf", """
                handoff.plugins.vault {
                  # The tokens.
                  # secret
                  tokens = []
                  # secret
                  password = ""
                  # secret
                  # allowed: 1..10
                  pin = 1
                  note = "public"
                }
                """).toUri().toURL();
        ConfigSource source = new ConfigSource(Optional.empty(), Map.of("handoff.plugins.vault.tokens", "[\"tok-1\", \"tok-2\"]"), Map.of());

        HandoffConfig config = HandoffConfig.load(source, List.of(reference));

        assertThat(value(config, "handoff.plugins.vault.tokens").value()).isEqualTo("<redacted>");
        assertThat(value(config, "handoff.plugins.vault.tokens").origin()).startsWith("-D on the command line");
        assertThat(value(config, "handoff.plugins.vault.password").value()).isEqualTo("\"\"");
        assertThat(value(config, "handoff.plugins.vault.note").value()).isEqualTo("\"public\"");
        assertThat(config.effectiveValues()).extracting(HandoffConfig.EffectiveValue::value).noneMatch(v -> v.contains("tok-1"));
        assertThatThrownBy(() -> HandoffConfig.load(new ConfigSource(Optional.empty(), Map.of("handoff.plugins.vault.pin", "4711"), Map.of()),
                List.of(reference)))
                .isInstanceOf(InvalidConfigException.class)
                .hasMessageContaining("handoff.plugins.vault.pin = <redacted> (from -D on the command line): out of range")
                .hasMessageNotContaining("4711");
    }

    /** A third-party plugin's reference.conf, as {@code ExternalPlugins.references()} hands it over. */
    private URL pluginReference()
            throws IOException
    {
        return write("acme-reference.conf", """
                handoff.plugins.acme {
                  a = "reference"
                  b = "reference"
                  c = "reference"
                  d = "reference"
                  # allowed: safe | quick
                  mode = "safe"
                }
                """).toUri().toURL();
    }

    private Path write(String name, String text)
            throws IOException
    {
        return Files.writeString(folder.resolve(name), text);
    }

    private static HandoffConfig.EffectiveValue value(HandoffConfig config, String path)
    {
        return config.effectiveValues().stream().filter(v -> v.path().equals(path)).findFirst()
                .orElseThrow(() -> new AssertionError("no effective value for " + path));
    }
}
