package io.handoff.core.security;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The key every node of one cluster shares (handoff.security.cluster-secret-file): HMAC-SHA256 with it proves
 * membership. The file holds base64 text (e.g. {@code head -c 32 /dev/urandom | base64}) or, when its text is not
 * base64, raw bytes; either way at least {@link #MIN_BYTES} bytes of key. The key never leaves this object: its
 * {@link #toString} and {@link #fingerprint} show a digest that cannot be turned back into it.
 *
 * <p>Every MAC here is over a context label and length-prefixed parts, so two different messages never share MAC
 * input and a MAC computed for one purpose (say, the router's signature) is worthless for another (a handshake).
 */
public final class ClusterSecret
{
    public static final int MIN_BYTES = 16;
    public static final int TAG_BYTES = 32;
    private static final String ALGORITHM = "HmacSHA256";
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS = EnumSet.of(PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private final SecretKeySpec key;
    private final String fingerprint;

    private ClusterSecret(byte[] key)
    {
        if (key.length < MIN_BYTES) {
            throw new IllegalArgumentException("a cluster secret needs at least " + MIN_BYTES + " bytes, this one has " + key.length
                    + "; make one with: head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE");
        }
        this.key = new SecretKeySpec(key, ALGORITHM);
        this.fingerprint = HexFormat.of().formatHex(tag("handoff cluster secret fingerprint"), 0, 4);
    }

    /** A secret from its key bytes (tests, and callers that hold the key themselves). */
    public static ClusterSecret of(byte[] key)
    {
        return new ClusterSecret(requireNonNull(key, "key is null").clone());
    }

    /**
     * Reads the secret from {@code file}, refusing a file that group or others may read or write (the secret would
     * not be one) and a key shorter than {@link #MIN_BYTES}; every refusal names the file and what to do.
     */
    public static ClusterSecret read(Path file)
    {
        requireNonNull(file, "file is null");
        byte[] content;
        try {
            PosixFileAttributes attributes = Files.readAttributes(file, PosixFileAttributes.class);
            if (!attributes.isRegularFile()) {
                throw new IllegalArgumentException("the cluster secret file " + file + " is not a regular file");
            }
            Set<PosixFilePermission> open = EnumSet.noneOf(PosixFilePermission.class);
            open.addAll(attributes.permissions());
            open.retainAll(GROUP_OR_OTHERS);
            if (!open.isEmpty()) {
                throw new IllegalArgumentException("the cluster secret file " + file + " is accessible to group or others ("
                        + PosixFilePermissions.toString(attributes.permissions())
                        + "); make it private: chmod 600 " + file);
            }
            content = Files.readAllBytes(file);
        }
        catch (NoSuchFileException e) {
            throw new IllegalArgumentException("the cluster secret file " + file + " does not exist; create one with: "
                    + "head -c 32 /dev/urandom | base64 > " + file + " && chmod 600 " + file, e);
        }
        catch (UnsupportedOperationException e) {
            throw new IllegalArgumentException("cannot check who may read the cluster secret file " + file
                    + ": its file system has no POSIX permissions", e);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the cluster secret file " + file + ": " + e.getMessage(), e);
        }
        byte[] key = decode(content);
        Arrays.fill(content, (byte) 0);
        try {
            return new ClusterSecret(key);
        }
        catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the cluster secret in " + file + " is too short: " + e.getMessage(), e);
        }
        finally {
            Arrays.fill(key, (byte) 0);
        }
    }

    // base64 text (surrounding whitespace ignored) is the recommended form; anything else is taken as raw bytes
    private static byte[] decode(byte[] content)
    {
        String text = new String(content, StandardCharsets.ISO_8859_1).strip();
        try {
            byte[] decoded = Base64.getDecoder().decode(text);
            if (decoded.length > 0) {
                return decoded;
            }
        }
        catch (IllegalArgumentException notBase64) {
            // raw bytes
        }
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** HMAC-SHA256 over {@code context} and each part, every one length-prefixed. */
    public byte[] tag(String context, byte[]... parts)
    {
        requireNonNull(context, "context is null");
        Mac mac = mac(key);
        update(mac, context.getBytes(StandardCharsets.UTF_8));
        for (byte[] part : parts) {
            update(mac, requireNonNull(part, "part is null"));
        }
        return mac.doFinal();
    }

    /** Whether {@code tag} is {@link #tag} of the same context and parts; constant-time in the tag's bytes. */
    public boolean verify(byte[] tag, String context, byte[]... parts)
    {
        requireNonNull(tag, "tag is null");
        return MessageDigest.isEqual(tag, tag(context, parts));
    }

    /** A key for one purpose derived from this secret (a session's key, say), never the secret itself. */
    public byte[] derive(String context, byte[]... parts)
    {
        return tag("handoff derived key: " + context, parts);
    }

    /** Eight hex digits that differ between secrets, to tell in logs whether two nodes hold the same one. */
    public String fingerprint()
    {
        return fingerprint;
    }

    @Override
    public String toString()
    {
        return "ClusterSecret[fingerprint " + fingerprint + "]";
    }

    static Mac mac(SecretKeySpec key)
    {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            return mac;
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JDK has " + ALGORITHM, e);
        }
    }

    static Mac mac(byte[] key)
    {
        return mac(new SecretKeySpec(key, ALGORITHM));
    }

    private static void update(Mac mac, byte[] part)
    {
        mac.update((byte) (part.length >>> 24));
        mac.update((byte) (part.length >>> 16));
        mac.update((byte) (part.length >>> 8));
        mac.update((byte) part.length);
        mac.update(part);
    }
}
