package io.handoff.core.plugin;

import io.handoff.spi.Spi;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Choosing a plugin that was refused names the refusal's reason (never "unknown plugin" or a kind mismatch), a
 * provider that failed before it reported an SPI version has none, and each refusal is logged once.
 */
class RefusedPluginChoiceTest
{
    private static final String SETTING = "handoff.disaggregation.transfer-backend";

    @TempDir
    Path folder;

    @Test
    void choosingAJarRefusedForABundledSpiCopyGivesThatReason()
    {
        TestPluginJar.transfer("fat").bundlingSpi().writeTo(folder, "fat.jar");
        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            PluginEntry refused = registry.entries().stream().filter(e -> e.id().equals("fat")).findFirst().orElseThrow();
            assertThatThrownBy(() -> registry.require("fat", "transfer", SETTING))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("transfer backend 'fat'")
                    .hasMessageContaining("was refused")
                    .hasMessageContaining(SETTING)
                    .hasMessageContaining(refused.reason())
                    .hasMessageNotContaining("unknown");
        }
    }

    @Test
    void choosingAJarWithUnmetPluginRequiresGivesThatReason()
    {
        TestPluginJar.transfer("future").requires(">=99.0.0").writeTo(folder, "future.jar");
        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            assertThatThrownBy(() -> registry.require("future", "transfer", SETTING))
                    .hasMessageContaining("Plugin-Requires '>=99.0.0' is not met by Handoff");
        }
    }

    @Test
    void choosingAProviderWhoseConstructorOrProbeThrowsGivesThatReason()
    {
        TestPluginJar.transfer("fragile").constructorThrows().writeTo(folder, "fragile.jar");
        TestPluginJar.transfer("probe").availabilityThrows().writeTo(folder, "probe.jar");
        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            assertThatThrownBy(() -> registry.require("fragile", "transfer", SETTING)).hasMessageContaining("constructor exploded");
            assertThatThrownBy(() -> registry.require("probe", "transfer", SETTING)).hasMessageContaining("probe exploded");
        }
    }

    @Test
    void aProviderThatFailedBeforeReportingItsSpiVersionHasNone()
    {
        TestPluginJar.transfer("fragile").constructorThrows().writeTo(folder, "fragile.jar");
        TestPluginJar.transfer("fat").bundlingSpi().writeTo(folder, "fat.jar");
        TestPluginJar.transfer("probe").availabilityThrows().writeTo(folder, "probe.jar");
        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            assertThat(registry.find("fragile").orElseThrow().spiVersion()).isNull();
            assertThat(registry.find("fat").orElseThrow().spiVersion()).isNull();
            // The probe ran after the provider reported its version: that one is known.
            assertThat(registry.find("probe").orElseThrow().spiVersion()).isEqualTo(Spi.VERSION);
        }
    }

    @Test
    void eachRefusalIsLoggedOnceAndLookupsLogNothing()
    {
        TestPluginJar.transfer("future").requires(">=99.0.0").writeTo(folder, "future.jar");
        List<String> warnings = new CopyOnWriteArrayList<>();
        AbstractAppender appender = new AbstractAppender("refusals", null, null, true, Property.EMPTY_ARRAY)
        {
            @Override
            public void append(LogEvent event)
            {
                if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                    warnings.add(event.getLoggerName() + ": " + event.getMessage().getFormattedMessage());
                }
            }
        };
        appender.start();
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        context.getRootLogger().addAppender(appender);
        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> registry.require("future", "transfer", SETTING)).isInstanceOf(IllegalArgumentException.class);
                registry.find("future");
            }
        }
        finally {
            context.getRootLogger().removeAppender(appender);
        }
        assertThat(warnings).filteredOn(w -> w.contains("future")).hasSize(1);
    }
}
