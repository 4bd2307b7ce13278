package io.handoff.core.security;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClusterSecretTest
{
    private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes();

    @TempDir
    Path dir;

    private Path file(String content, String mode)
            throws Exception
    {
        Path file = dir.resolve("secret-" + mode + "-" + content.length());
        Files.writeString(file, content);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
        return file;
    }

    @Test
    void aPrivateFileOfBase64TextIsTheKeyItEncodes()
            throws Exception
    {
        ClusterSecret read = ClusterSecret.read(file(Base64.getEncoder().encodeToString(KEY) + "\n", "rw-------"));

        assertThat(read.fingerprint()).isEqualTo(ClusterSecret.of(KEY).fingerprint());
        assertThat(read.verify(ClusterSecret.of(KEY).tag("ctx", new byte[] {1}), "ctx", new byte[] {1})).isTrue();
        assertThat(read.toString()).doesNotContain(Base64.getEncoder().encodeToString(KEY)).contains(read.fingerprint());
    }

    @Test
    void aFileGroupOrOthersMayReadIsRefusedSayingHowToFixIt()
            throws Exception
    {
        Path file = file(Base64.getEncoder().encodeToString(KEY), "rw-r-----");

        assertThatThrownBy(() -> ClusterSecret.read(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("accessible to group or others").hasMessageContaining("chmod 600 " + file);
    }

    @Test
    void aShortOrMissingSecretIsRefused()
            throws Exception
    {
        Path shortFile = file(Base64.getEncoder().encodeToString(new byte[15]), "rw-------");

        assertThatThrownBy(() -> ClusterSecret.read(shortFile)).hasMessageContaining("at least 16 bytes, this one has 15");
        assertThatThrownBy(() -> ClusterSecret.read(dir.resolve("absent"))).hasMessageContaining("does not exist")
                .hasMessageContaining("head -c 32 /dev/urandom | base64");
    }

    @Test
    void tagsDependOnTheKeyTheContextAndHowThePartsSplit()
    {
        ClusterSecret secret = ClusterSecret.of(KEY);
        byte[] tag = secret.tag("router", "ab".getBytes(), "c".getBytes());

        assertThat(secret.verify(tag, "router", "ab".getBytes(), "c".getBytes())).isTrue();
        assertThat(secret.verify(tag, "router", "a".getBytes(), "bc".getBytes())).as("another split").isFalse();
        assertThat(secret.verify(tag, "handshake", "ab".getBytes(), "c".getBytes())).as("another context").isFalse();
        assertThat(ClusterSecret.of("another key of 32 bytes, exactly".getBytes()).verify(tag, "router", "ab".getBytes(), "c".getBytes()))
                .as("another key").isFalse();
    }
}
