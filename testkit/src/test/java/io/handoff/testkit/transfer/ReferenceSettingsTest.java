package io.handoff.testkit.transfer;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReferenceSettingsTest
{
    private final ReferenceSettings sample = new ReferenceSettings("kit-sample", ReferenceSettingsTest.class.getClassLoader());

    @Test
    void readsThePluginsDefaultsAndValidatesOverridesAsTheEngineDoes()
    {
        assertThat(sample.defaults().getDuration("wait")).isEqualTo(Duration.ofSeconds(5));
        assertThat(sample.with("wait", "200ms").getDuration("wait")).isEqualTo(Duration.ofMillis(200));
        assertThatThrownBy(() -> sample.with("no-such-key", "1")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sample.with("wait")).hasMessageContaining("key, value pairs");
    }

    @Test
    void findsThePluginsOwnReferenceAmongTheOthersAndListsItsKeysInOrder()
    {
        assertThat(sample.text()).contains("handoff.plugins.kit-sample {");
        assertThat(sample.declared()).containsExactly(
                java.util.Map.entry("wait", "5s"), java.util.Map.entry("buffer-bytes", "4KiB"), java.util.Map.entry("lonely", "x"));
        assertThatThrownBy(() -> new ReferenceSettings("kit", ReferenceSettingsTest.class.getClassLoader()).text())
                .hasMessageContaining("no reference.conf that declares handoff.plugins.kit is visible");
    }

    @Test
    void namesEveryKeyWithoutItsCommentOrTypeLine()
    {
        assertThat(sample.undocumented()).containsExactly(
                "buffer-bytes: a size, but the line above is '# A size whose type line is missing.', not '# type: bytes'",
                "lonely: no comment line above it");
    }
}
