package io.handoff.core.plugin;

import io.handoff.spi.Spi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every kind of bad plugin JAR is listed as unavailable with a reason an operator can act on, and
 * never stops the good JAR next to it from loading.
 */
class BadPluginJarTest
{
    @TempDir
    Path folder;

    @Test
    void corruptJarIsReportedAsNotAZipFile()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.corrupt(dir, "broken.jar"));

        assertThat(bad.id()).isEqualTo("broken");
        assertThat(bad.kind()).isEqualTo("unknown");
        assertThat(bad.reason()).contains("not a valid JAR (zip) file");
    }

    @Test
    void jarWithoutPluginIdIsReportedNamingTheManifestEntries()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("anonymous").withoutPluginId().writeTo(dir, "anonymous.jar"));

        assertThat(bad.id()).isEqualTo("anonymous");
        assertThat(bad.reason()).contains("no Plugin-Id", "MANIFEST.MF", "Plugin-Version", "Plugin-Requires");
    }

    @Test
    void unmetPluginRequiresIsReportedWithTheConstraintAndThisVersion()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("future").requires(">=99.0.0").writeTo(dir, "future.jar"));

        assertThat(bad.id()).isEqualTo("future");
        assertThat(bad.reason()).contains("Plugin-Requires '>=99.0.0'", "not met by Handoff 0.1.0");
    }

    @Test
    void jarBundlingItsOwnSpiCopyIsReportedNamingTheClassAndScopeProvided()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("fat").bundlingSpi().writeTo(dir, "fat.jar"));

        assertThat(bad.id()).isEqualTo("fat");
        assertThat(bad.reason()).contains("bundles its own copy", "io/handoff/spi/Spi.class", "<scope>provided</scope>");
    }

    @Test
    void providerWhoseConstructorThrowsIsReportedWithTheException()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("fragile").constructorThrows().writeTo(dir, "fragile.jar"));

        assertThat(bad.id()).isEqualTo("fragile");
        assertThat(bad.kind()).isEqualTo("transfer");
        assertThat(bad.reason()).contains("could not be constructed", "Provider_fragile", "IllegalStateException", "constructor exploded");
    }

    @Test
    void providerWhoseAvailabilityProbeThrowsIsReportedWithTheException()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("probe").availabilityThrows().writeTo(dir, "probe.jar"));

        assertThat(bad.id()).isEqualTo("probe");
        assertThat(bad.reason()).contains("availability probe threw", "IllegalStateException", "probe exploded");
    }

    @Test
    void jarWithoutServicesFileIsReportedNamingTheFileToAdd()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("silent").withoutServicesFile().writeTo(dir, "silent.jar"));

        assertThat(bad.id()).isEqualTo("silent");
        assertThat(bad.reason()).contains("declares no provider", "META-INF/services/io.handoff.spi.transfer.TransferBackendProvider");
    }

    @Test
    void providerBuiltForANewerSpiIsReportedWithBothVersions()
    {
        int newer = Spi.VERSION + 1;
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("newer").spiVersion(newer).writeTo(dir, "newer.jar"));

        assertThat(bad.id()).isEqualTo("newer");
        assertThat(bad.reason()).contains("SPI version " + newer, "provides version " + Spi.VERSION);
    }

    @Test
    void providerWithAnInvalidIdIsReportedWithTheRuleForIds()
    {
        PluginEntry bad = besideGoodJar(dir -> TestPluginJar.transfer("Bad_Id").pluginId("bad-id").writeTo(dir, "bad-id.jar"));

        assertThat(bad.reason()).contains("invalid id 'Bad_Id'", "lower-case");
    }

    @Test
    void duplicateIdFirstJarInFileNameOrderWinsAndTheOtherNamesIt()
    {
        Path first = TestPluginJar.transfer("dup").pluginId("dup-one").capabilities("SAME_HOST").writeTo(folder, "a-dup.jar");
        Path second = TestPluginJar.transfer("dup").pluginId("dup-two").capabilities("REMOTE").writeTo(folder, "b-dup.jar");

        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            List<PluginEntry> dups = registry.entries().stream().filter(e -> e.id().equals("dup")).toList();
            assertThat(dups).hasSize(2);
            PluginEntry winner = registry.find("dup").orElseThrow();
            assertThat(winner.source()).isEqualTo(first.toString());
            assertThat(winner.available()).isTrue();
            assertThat(winner.capabilities()).containsExactly("SAME_HOST");
            PluginEntry loser = dups.stream().filter(e -> !e.available()).findFirst().orElseThrow();
            assertThat(loser.source()).isEqualTo(second.toString());
            assertThat(loser.provider()).isEmpty();
            assertThat(loser.reason()).contains("duplicate id 'dup'", first.toString(), "takes precedence");
        }
    }

    @Test
    void duplicateIdFirstRegisteredWinsEvenWhenItIsUnavailable()
    {
        // Precedence is by order alone, so which provider owns an id never depends on the machine's probes.
        Path first = TestPluginJar.transfer("dup").pluginId("dup-one").availability("Availability.unavailable(\"no device\")")
                .writeTo(folder, "a-dup.jar");
        Path second = TestPluginJar.transfer("dup").pluginId("dup-two").writeTo(folder, "b-dup.jar");

        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            PluginEntry owner = registry.find("dup").orElseThrow();
            assertThat(owner.source()).isEqualTo(first.toString());
            assertThat(owner.reason()).isEqualTo("no device");
            PluginEntry loser = registry.entries().stream().filter(e -> e.source().equals(second.toString())).findFirst().orElseThrow();
            assertThat(loser.available()).isFalse();
            assertThat(loser.reason()).contains("duplicate id 'dup'", first.toString());
        }
    }

    @Test
    void severalBadJarsAreEachReportedAndTheGoodOneStillLoads()
    {
        TestPluginJar.corrupt(folder, "a-broken.jar");
        TestPluginJar.transfer("b-anonymous").withoutPluginId().writeTo(folder, "b-anonymous.jar");
        Path good = TestPluginJar.transfer("good").writeTo(folder, "c-good.jar");
        TestPluginJar.transfer("d-future").requires(">=99.0.0").writeTo(folder, "d-future.jar");
        TestPluginJar.transfer("e-fragile").constructorThrows().writeTo(folder, "e-fragile.jar");

        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            assertThat(registry.entries()).extracting(PluginEntry::id)
                    .containsExactlyInAnyOrder("a-broken", "b-anonymous", "good", "d-future", "e-fragile");
            assertThat(registry.entries()).filteredOn(PluginEntry::available).extracting(PluginEntry::source)
                    .containsExactly(good.toString());
            assertThat(registry.entries()).filteredOn(e -> !e.available())
                    .allSatisfy(e -> assertThat(e.reason()).isNotBlank());
        }
    }

    /**
     * Writes a good JAR and the bad one built by {@code writeBad}, discovers, checks the good one is still
     * available, and returns the bad JAR's entry (checked to be unavailable, from that JAR).
     */
    private PluginEntry besideGoodJar(Function<Path, Path> writeBad)
    {
        Path good = TestPluginJar.transfer("good").writeTo(folder, "good.jar");
        Path bad = writeBad.apply(folder);

        try (PluginRegistry registry = ThirdPartyPluginTest.discover(folder)) {
            PluginEntry goodEntry = registry.find("good").orElseThrow();
            assertThat(goodEntry.available()).as("the good JAR next to a bad one").isTrue();
            assertThat(goodEntry.source()).isEqualTo(good.toString());

            List<PluginEntry> fromBad = registry.entries().stream().filter(e -> e.source().equals(bad.toString())).toList();
            assertThat(fromBad).as("entries from %s", bad).hasSize(1);
            PluginEntry entry = fromBad.getFirst();
            assertThat(entry.available()).isFalse();
            assertThat(entry.provider()).isEmpty();
            return entry;
        }
    }
}
