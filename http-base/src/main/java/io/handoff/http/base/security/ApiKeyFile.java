package io.handoff.http.base.security;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * {@code handoff.server.api-key-file}: one key per line (blank lines and lines starting with {@code #} are
 * skipped), so keys stay out of configuration files, command lines and {@code handoff config}. Like the cluster
 * secret, the file must be private to its owner: a key that others may read is no key.
 */
public final class ApiKeyFile
{
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS = EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private ApiKeyFile() {}

    /** The keys in {@code file}; every refusal names the file and what to do. */
    public static List<String> read(Path file)
    {
        requireNonNull(file, "file is null");
        List<String> lines;
        try {
            PosixFileAttributes attributes = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isRegularFile()) {
                throw new IllegalArgumentException("the API key file " + file + " (handoff.server.api-key-file) is not a regular file");
            }
            Set<PosixFilePermission> open = EnumSet.copyOf(attributes.permissions());
            open.retainAll(GROUP_OR_OTHERS);
            if (!open.isEmpty()) {
                throw new IllegalArgumentException("the API key file " + file + " is accessible to group or others ("
                        + PosixFilePermissions.toString(attributes.permissions()) + "); make it private: chmod 600 " + file);
            }
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        }
        catch (NoSuchFileException e) {
            throw new IllegalArgumentException("the API key file " + file + " (handoff.server.api-key-file) does not exist", e);
        }
        catch (UnsupportedOperationException e) {
            throw new IllegalArgumentException("cannot check who may read the API key file " + file
                    + ": its file system has no POSIX permissions", e);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the API key file " + file + ": " + e.getMessage(), e);
        }
        List<String> keys = new ArrayList<>();
        for (String line : lines) {
            String key = line.strip();
            if (!key.isEmpty() && !key.startsWith("#")) {
                keys.add(key);
            }
        }
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("the API key file " + file + " holds no key; write one key per line");
        }
        return keys;
    }
}
