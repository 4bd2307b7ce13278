package io.handoff.core.plugin;

import io.handoff.core.HandoffVersion;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.Spi;
import io.handoff.spi.transfer.TransferBackendProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A plugin JAR dropped into the plugin folder is found through the same registry as built-ins. */
class ThirdPartyPluginTest
{
    @TempDir
    Path folder;

    @Test
    void transferProviderInAJarIsListedWithItsSourceCapabilitiesAndAvailability()
    {
        Path jar = TestPluginJar.transfer("acme-shm").capabilities("SAME_HOST", "STAGING").writeTo(folder, "acme-shm.jar");

        try (PluginRegistry registry = discover(folder)) {
            assertThat(registry.entries()).hasSize(1);
            PluginEntry entry = registry.find("acme-shm").orElseThrow();
            assertThat(entry.kind()).isEqualTo("transfer");
            assertThat(entry.source()).isEqualTo(jar.toString());
            assertThat(entry.builtin()).isFalse();
            assertThat(entry.available()).isTrue();
            assertThat(entry.reason()).isNull();
            assertThat(entry.capabilities()).containsExactly("SAME_HOST", "STAGING");
            assertThat(entry.version()).isEqualTo("1.0.0");
            assertThat(entry.spiVersion()).isEqualTo(Spi.VERSION);
            assertThat(entry.description()).isEqualTo("test plugin acme-shm");
            assertThat(entry.provider()).get().isInstanceOf(TransferBackendProvider.class);
        }
    }

    @Test
    void attentionProviderInAJarIsListedWithItsCapabilities()
    {
        Path jar = TestPluginJar.attention("acme-attn").writeTo(folder, "acme-attn.jar");

        try (PluginRegistry registry = discover(folder)) {
            PluginEntry entry = registry.find("acme-attn").orElseThrow();
            assertThat(entry.kind()).isEqualTo("attention");
            assertThat(entry.source()).isEqualTo(jar.toString());
            assertThat(entry.available()).isTrue();
            assertThat(entry.capabilities()).containsExactly("GQA", "F32", "PAGE_SIZE_1_64", "DETERMINISTIC");
        }
    }

    @Test
    void providerThatReportsUnavailableIsListedWithItsOwnReason()
    {
        TestPluginJar.transfer("acme-rdma").availability("Availability.unavailable(\"no RDMA device\")").writeTo(folder, "acme-rdma.jar");

        try (PluginRegistry registry = discover(folder)) {
            PluginEntry entry = registry.find("acme-rdma").orElseThrow();
            assertThat(entry.available()).isFalse();
            assertThat(entry.reason()).isEqualTo("no RDMA device");
            assertThat(entry.capabilities()).containsExactly("SAME_HOST");
        }
    }

    @Test
    void pluginSeesTheSpiAndTheJdkButNotTheEnginesInternalsNorItsLibraries()
    {
        // The probe turns what the plugin's class loader can see into its availability. On the module path
        // the platform loader would hand out every boot-layer package, engine internals included.
        String probe = """
                !canLoad("io.handoff.spi.transfer.TransferCapability") ? Availability.unavailable("SPI invisible")
                : !canLoad("javax.sql.DataSource") ? Availability.unavailable("JDK platform module invisible")
                : !canLoad("org.slf4j.Logger") ? Availability.unavailable("logging API invisible")
                : canLoad("io.handoff.core.plugin.PluginRegistry") ? Availability.unavailable("engine internals visible")
                : canLoad("com.fasterxml.jackson.databind.ObjectMapper") ? Availability.unavailable("engine libraries visible")
                : canLoad("com.typesafe.config.Config") ? Availability.unavailable("engine libraries visible")
                : Availability.AVAILABLE""";
        TestPluginJar.transfer("peeker").availability(probe).writeTo(folder, "peeker.jar");

        try (PluginRegistry registry = discover(folder)) {
            PluginEntry entry = registry.find("peeker").orElseThrow();
            assertThat(entry.reason()).isNull();
            assertThat(entry.available()).isTrue();
        }
    }

    @Test
    void providerIsCalledWithItsOwnClassLoaderAsContextLoader()
    {
        TestPluginJar.transfer("context")
                .availability("Thread.currentThread().getContextClassLoader() == Provider_context.class.getClassLoader()"
                        + " ? Availability.AVAILABLE : Availability.unavailable(\"wrong context class loader\")")
                .writeTo(folder, "context.jar");

        try (PluginRegistry registry = discover(folder)) {
            PluginEntry entry = registry.find("context").orElseThrow();
            assertThat(entry.reason()).isNull();
            assertThat(registry.loaderOf(entry)).isSameAs(entry.provider().orElseThrow().getClass().getClassLoader());
        }
    }

    @Test
    void jarsAreLoadedInFileNameOrder()
    {
        TestPluginJar.transfer("zeta").writeTo(folder, "b-zeta.jar");
        TestPluginJar.transfer("alpha").writeTo(folder, "c-alpha.jar");
        TestPluginJar.attention("mid").writeTo(folder, "a-mid.jar");

        try (ExternalPlugins external = ExternalPlugins.load(folder, HandoffVersion.get())) {
            assertThat(external.failures()).isEmpty();
            assertThat(external.loaded()).extracting(ExternalPlugins.Loaded::pluginId).containsExactly("mid", "zeta", "alpha");
        }
    }

    @Test
    void missingPluginFolderHoldsNoPlugins()
    {
        try (PluginRegistry registry = discover(folder.resolve("does-not-exist"))) {
            assertThat(registry.entries()).isEmpty();
        }
    }

    @Test
    void filesThatAreNotJarsAreIgnored()
            throws Exception
    {
        java.nio.file.Files.writeString(folder.resolve("README.txt"), "drop plugin JARs here");
        TestPluginJar.transfer("acme").writeTo(folder, "acme.jar");

        try (PluginRegistry registry = discover(folder)) {
            assertThat(registry.entries()).extracting(PluginEntry::id).containsExactly("acme");
        }
    }

    static PluginRegistry discover(Path folder)
    {
        return PluginRegistry.discover(ExternalPlugins.load(folder, HandoffVersion.get()), PluginSettings::empty);
    }

    static List<String> ids(PluginRegistry registry)
    {
        return registry.entries().stream().map(PluginEntry::id).toList();
    }
}
