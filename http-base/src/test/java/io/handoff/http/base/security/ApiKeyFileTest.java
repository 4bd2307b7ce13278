package io.handoff.http.base.security;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ApiKeyFileTest
{
    @TempDir
    Path folder;

    @Test
    void readsOneKeyPerLineSkippingBlankAndCommentLines()
            throws IOException
    {
        Path file = write("keys", "# team a\nk-one\n\n  k-two  \n# retired: k-old\n", "rw-------");

        assertThat(ApiKeyFile.read(file)).containsExactly("k-one", "k-two");
    }

    @Test
    void aFileOthersMayReadIsRefusedWithTheChmodThatFixesIt()
            throws IOException
    {
        Path file = write("keys", "k-one\n", "rw-r--r--");

        assertThatThrownBy(() -> ApiKeyFile.read(file))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is accessible to group or others (rw-r--r--)")
                .hasMessageContaining("chmod 600 " + file)
                .hasMessageNotContaining("k-one");
    }

    @Test
    void aMissingFileAnEmptyOneAndASymlinkAreRefusedNamingTheFile()
            throws IOException
    {
        Path missing = folder.resolve("absent");
        Path empty = write("empty", "# nothing yet\n", "rw-------");
        Path link = Files.createSymbolicLink(folder.resolve("link"), write("target", "k\n", "rw-------"));

        assertThatThrownBy(() -> ApiKeyFile.read(missing)).hasMessageContaining(missing + " (handoff.server.api-key-file) does not exist");
        assertThatThrownBy(() -> ApiKeyFile.read(empty)).hasMessageContaining(empty + " holds no key");
        assertThatThrownBy(() -> ApiKeyFile.read(link)).hasMessageContaining(link + " (handoff.server.api-key-file) is not a regular file");
    }

    private Path write(String name, String text, String permissions)
            throws IOException
    {
        Path file = Files.writeString(folder.resolve(name), text);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(permissions));
        return file;
    }
}
