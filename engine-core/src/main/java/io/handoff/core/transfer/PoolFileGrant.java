package io.handoff.core.transfer;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.security.RunDirectory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * What a sender checks of a receiver's pool file before and after opening it ({@link PoolDescriptions#map}). The
 * path came from the network: it is used only when it names what a receiver of this user created in this engine's
 * run directory, and the file opened is the file checked (same file key, same size).
 */
public final class PoolFileGrant
{
    private static final Set<PosixFilePermission> OWNER = EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
            PosixFilePermission.OWNER_EXECUTE);

    private final Path file;
    private final Object fileKey;
    private final long size;

    private PoolFileGrant(Path file, Object fileKey, long size)
    {
        this.file = file;
        this.fileKey = fileKey;
        this.size = size;
    }

    /**
     * What a tensor-parallel rank checks of the pool file its leader named before it maps its slice: the same rules as for a
     * receiver's pool file (inside {@code allowedRoot} with no link on the way, a plain file of this user open to nobody
     * else), and exactly {@code bytes} long, the pools of the whole group.
     *
     * @throws java.io.IOException naming what is wrong
     */
    public static void checkRankPool(Path file, Path allowedRoot, long bytes)
            throws IOException
    {
        try {
            check(file, allowedRoot, bytes);
        }
        catch (PoolGrantRefused | UncheckedIOException e) {
            throw new IOException("the leader's KV pool file: " + e.getMessage(), e);
        }
    }

    /** @param needed the bytes the described regions reach into the file */
    static PoolFileGrant check(Path file, Path allowedRoot, long needed)
    {
        requireNonNull(file, "file is null");
        Path root = allowedRoot.toAbsolutePath().normalize();
        if (!file.isAbsolute() || !file.equals(file.normalize()) || !file.startsWith(root) || file.equals(root)) {
            throw new PoolGrantRefused("the receiver's pool file " + file + " is not inside this engine's run directory " + root
                    + ": a sender maps only pool files a receiver of its own user created there (a decode of another user, or a "
                    + "forged descriptor?)");
        }
        try {
            for (Path step = file; !step.equals(root); step = step.getParent()) {
                if (Files.isSymbolicLink(step)) {
                    throw new PoolGrantRefused("the receiver's pool file " + file + " is reached through the link " + step
                            + "; a pool file is never mapped through a link");
                }
            }
            PosixFileAttributes attributes = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isRegularFile()) {
                throw new PoolGrantRefused("the receiver's pool file " + file + " is not a plain file");
            }
            int owner = RunDirectory.uidOf(file);
            int self = RunDirectory.currentUid();
            if (owner != self) {
                throw new PoolGrantRefused("the receiver's pool file " + file + " belongs to user " + owner + ", not to this process's user "
                        + self);
            }
            long size = attributes.size();
            // a receiver's last region may be followed by its alignment padding, no more
            if (size < needed || size >= needed + KvGeometry.REGION_ALIGNMENT) {
                throw new PoolGrantRefused("the receiver's last region ends at byte " + needed + " of " + file + ", which has " + size
                        + " bytes; a pool file is exactly as large as its regions");
            }
            if (!OWNER.containsAll(attributes.permissions())) {
                throw new PoolGrantRefused("the receiver's pool file " + file + " is open to group or others ("
                        + PosixFilePermissions.toString(attributes.permissions()) + "); a receiver creates its pool file 0600");
            }
            return new PoolFileGrant(file, attributes.fileKey(), size);
        }
        catch (NoSuchFileException e) {
            throw new UncheckedIOException("cannot map the receiver's pool file " + file + ": it does not exist; is the decode running "
                    + "on this host?", e);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot check the receiver's pool file " + file + ": " + e.getMessage(), e);
        }
    }

    /** After opening: still the same plain file, of the same size (nobody swapped it in between). */
    void recheck(FileChannel channel)
            throws IOException
    {
        PosixFileAttributes now = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!now.isRegularFile() || !Objects.equals(now.fileKey(), fileKey) || channel.size() != size) {
            throw new PoolGrantRefused("the receiver's pool file " + file + " changed while it was being opened; not mapping it");
        }
    }
}
