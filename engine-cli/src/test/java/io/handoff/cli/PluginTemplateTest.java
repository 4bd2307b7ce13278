package io.handoff.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PluginTemplateTest
{
    @TempDir
    Path folder;

    @Test
    void pluginRequiresAcceptsThisMinorVersionLine()
    {
        assertThat(PluginTemplate.pluginRequires("0.1.0")).isEqualTo(">=0.1.0 & <0.2.0");
        assertThat(PluginTemplate.pluginRequires("2.9.3-SNAPSHOT")).isEqualTo(">=2.9.3 & <2.10.0");
    }

    @Test
    void packageIsALegalJavaName()
    {
        assertThat(PluginTemplate.packageOf("kit-probe")).isEqualTo("org.example.handoff.kitprobe");
        assertThat(PluginTemplate.packageOf("for")).isEqualTo("org.example.handoff.for_");
    }

    @Test
    void writesAStandaloneTransferProjectWithEveryPlaceholderFilled()
            throws Exception
    {
        Path project = folder.resolve("p");
        PluginTemplate.forCurrentEngine().write("kit-probe", PluginTemplate.Kind.TRANSFER, project);
        String pom = Files.readString(project.resolve("pom.xml"));
        assertThat(pom).doesNotContain("<parent>").contains("<artifactId>handoff-transfer-testkit</artifactId>", "<Plugin-Id>kit-probe</Plugin-Id>",
                "&gt;=").doesNotContain("@");
        assertThat(Files.readString(project.resolve("src/main/resources/reference.conf"))).contains("handoff.plugins.kit-probe {", "# type: bytes");
        assertThat(project.resolve("src/main/resources/META-INF/services/io.handoff.spi.transfer.TransferBackendProvider")).isRegularFile();
        try (var files = Files.walk(project)) {
            assertThat(files.filter(Files::isRegularFile).map(p -> {
                try {
                    return Files.readString(p);
                }
                catch (Exception e) {
                    throw new AssertionError(e);
                }
            }).filter(text -> text.matches("(?s).*@[A-Z_]+@.*"))).isEmpty();
        }
    }

    @Test
    void refusesANonEmptyFolderAndAnInvalidId()
            throws Exception
    {
        Files.writeString(folder.resolve("x"), "");
        assertThatThrownBy(() -> PluginTemplate.forCurrentEngine().write("ok-id", PluginTemplate.Kind.ATTENTION, folder))
                .hasMessageContaining("is not empty");
        assertThatThrownBy(() -> PluginTemplate.forCurrentEngine().write("Bad_Id", PluginTemplate.Kind.ATTENTION, folder.resolve("n")))
                .hasMessageContaining("is not a plugin id");
        assertThatThrownBy(() -> PluginTemplate.Kind.parse("storage")).hasMessageContaining("use transfer or attention");
    }
}
