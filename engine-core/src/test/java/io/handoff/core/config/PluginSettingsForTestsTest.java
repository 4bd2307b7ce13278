package io.handoff.core.config;

import io.handoff.spi.PluginSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What plugin tests get from {@link HandoffConfig#pluginSettings}: the engine's own reading and validation. */
class PluginSettingsForTestsTest
{
    @Test
    void overridesApplyOverTheReferenceAndAreValidatedLikeTheEnginesConfiguration(@TempDir Path dir)
            throws Exception
    {
        Files.writeString(dir.resolve("reference.conf"), """
                handoff.plugins.demo {
                  # allowed: a | b
                  mode = "a"
                  # type: duration
                  wait = 5s
                }
                """);
        try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()}, null)) {
            PluginSettings defaults = HandoffConfig.pluginSettings("demo", loader, Map.of());
            PluginSettings overridden = HandoffConfig.pluginSettings("demo", loader, Map.of("mode", "b", "wait", "250ms"));

            assertThat(defaults.getString("mode")).isEqualTo("a");
            assertThat(defaults.pluginId()).isEqualTo("demo");
            assertThat(overridden.getString("mode")).isEqualTo("b");
            assertThat(overridden.getDuration("wait")).isEqualTo(Duration.ofMillis(250));
            assertThatThrownBy(() -> HandoffConfig.pluginSettings("demo", loader, Map.of("mood", "b")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("did you mean 'handoff.plugins.demo.mode'");
            assertThatThrownBy(() -> HandoffConfig.pluginSettings("demo", loader, Map.of("mode", "c")))
                    .hasMessageContaining("handoff.plugins.demo.mode = \"c\"").hasMessageContaining("allowed: a | b");
        }
    }
}
