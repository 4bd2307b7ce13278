package io.handoff.core.security;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Objects.requireNonNull;

/**
 * Where this process keeps files other processes of the same user may map (a decode's KV pool): a folder
 * {@code <base>/handoff-<uid>/<pid>-<random>/}, both levels mode 0700 and owned by this user, so no other user can
 * read a request's KV, plant a file, or swap one. The user's folder ({@link #root}) is the only place a sender maps
 * a receiver's pool from.
 *
 * <p>Removed on {@link #close} (and by a shutdown hook, for an exit that skips it). A process killed with
 * {@code kill -9} leaves its folder behind; the next one to start removes every folder in the root whose process is
 * gone ({@link #removeStale}), touching only folders and plain files of this user, never following a link.
 */
public final class RunDirectory
        implements AutoCloseable
{
    private static final Logger log = LogManager.getLogger(RunDirectory.class);
    private static final Set<PosixFilePermission> OWNER_ONLY_DIRECTORY = PosixFilePermissions.fromString("rwx------");
    public static final Set<PosixFilePermission> OWNER_ONLY_FILE = PosixFilePermissions.fromString("rw-------");
    private static final Pattern PROCESS_FOLDER = Pattern.compile("(\\d{1,10})-[0-9a-f]{8}");
    // a pid reused by a process started this long after the folder was made is not the folder's owner
    private static final Duration START_SLACK = Duration.ofSeconds(2);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path root;
    private final Path path;
    private final Thread removeAtExit;
    private boolean closed;

    private RunDirectory(Path root, Path path)
    {
        this.root = root;
        this.path = path;
        this.removeAtExit = new Thread(this::remove, "handoff-run-directory-cleanup");
    }

    /**
     * Creates this process's folder under {@code base} (e.g. /dev/shm), after checking the user's folder there is
     * this user's and private, and removing the folders of processes that are gone.
     */
    public static RunDirectory create(Path base)
    {
        requireNonNull(base, "base is null");
        int uid = currentUid();
        Path root = base.toAbsolutePath().normalize().resolve("handoff-" + uid);
        try {
            ensurePrivateFolder(root, uid);
            removeStale(root, uid);
            Path path = root.resolve(ProcessHandle.current().pid() + "-" + HexFormat.of().toHexDigits(RANDOM.nextInt()));
            Files.createDirectory(path, ownerOnlyDirectory());
            RunDirectory directory = new RunDirectory(root, path);
            Runtime.getRuntime().addShutdownHook(directory.removeAtExit);
            return directory;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot create this process's private folder under " + root + ": " + e.getMessage(), e);
        }
    }

    /** The user's folder: every process folder of this user, and the only place pool files are mapped from. */
    public Path root()
    {
        return root;
    }

    /** This process's folder. */
    public Path path()
    {
        return path;
    }

    /** Removes this process's folder and what it holds. */
    @Override
    public synchronized void close()
    {
        if (closed) {
            return;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(removeAtExit);
        }
        catch (IllegalStateException shuttingDown) {
            // the hook runs (or ran) anyway
        }
        remove();
    }

    private synchronized void remove()
    {
        if (closed) {
            return;
        }
        closed = true;
        try {
            removeFolder(path, currentUid());
        }
        catch (IOException e) {
            log.warn("cannot remove this process's folder {}: {}", path, e.getMessage());
        }
    }

    /**
     * Removes the folders in {@code root} whose process is gone: named {@code <pid>-<random>}, a folder (not a link)
     * of user {@code uid}, holding only plain files of that user, and no live process with that pid that started
     * before the folder was last modified. Returns the folders removed.
     */
    public static List<Path> removeStale(Path root, int uid)
            throws IOException
    {
        List<Path> removed = new ArrayList<>();
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            return removed;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
            for (Path entry : entries) {
                Matcher name = PROCESS_FOLDER.matcher(entry.getFileName().toString());
                if (!name.matches()) {
                    continue;
                }
                PosixFileAttributes attributes;
                try {
                    attributes = Files.readAttributes(entry, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                }
                catch (NoSuchFileException gone) {
                    continue;
                }
                if (!attributes.isDirectory() || uidOf(entry) != uid || alive(Long.parseLong(name.group(1)), attributes.lastModifiedTime().toInstant())) {
                    continue;
                }
                try {
                    if (removeFolder(entry, uid)) {
                        removed.add(entry);
                        log.info("removed {}, left behind by process {}, which is gone", entry, name.group(1));
                    }
                }
                catch (IOException e) {
                    log.warn("cannot remove {}, left behind by process {}: {}", entry, name.group(1), e.getMessage());
                }
            }
        }
        return removed;
    }

    private static final class Uid
    {
        static final int VALUE = readUid();
    }

    /** The effective user id of this process (Linux: /proc/self/status; elsewhere the owner of a new temporary file). */
    public static int currentUid()
    {
        return Uid.VALUE;
    }

    private static int readUid()
    {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
                }
            }
        }
        catch (IOException | RuntimeException e) {
            // not Linux: ask the file system who we are
        }
        try {
            Path probe = Files.createTempFile("handoff-uid", ".probe");
            try {
                return uidOf(probe);
            }
            finally {
                Files.deleteIfExists(probe);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot tell this process's user id: " + e.getMessage(), e);
        }
    }

    /** The owner's uid of {@code file} itself (a link is not followed). */
    public static int uidOf(Path file)
            throws IOException
    {
        return (Integer) Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    }

    public static FileAttribute<Set<PosixFilePermission>> ownerOnlyFile()
    {
        return PosixFilePermissions.asFileAttribute(OWNER_ONLY_FILE);
    }

    private static FileAttribute<Set<PosixFilePermission>> ownerOnlyDirectory()
    {
        return PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIRECTORY);
    }

    private static void ensurePrivateFolder(Path root, int uid)
            throws IOException
    {
        try {
            Files.createDirectory(root, ownerOnlyDirectory());
        }
        catch (FileAlreadyExistsException exists) {
            // made earlier (by us, or planted: checked next)
        }
        PosixFileAttributes attributes = Files.readAttributes(root, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isDirectory()) {
            throw new IOException(root + " is not a folder (a link or a file is there); remove it");
        }
        int owner = uidOf(root);
        if (owner != uid) {
            throw new IOException(root + " belongs to user " + owner + ", not to this process's user " + uid
                    + "; someone else made it: remove it, or run as its owner");
        }
        if (!OWNER_ONLY_DIRECTORY.containsAll(attributes.permissions())) {
            Files.setPosixFilePermissions(root, OWNER_ONLY_DIRECTORY);
        }
    }

    private static boolean alive(long pid, Instant folderTime)
    {
        Optional<ProcessHandle> process = ProcessHandle.of(pid);
        if (process.isEmpty() || !process.get().isAlive()) {
            return false;
        }
        // a live process that started after the folder was made has only reused the pid
        return process.get().info().startInstant().map(start -> !start.isAfter(folderTime.plus(START_SLACK))).orElse(true);
    }

    // deletes the plain files of `uid` in `folder`, then the folder; leaves everything when it holds anything else
    private static boolean removeFolder(Path folder, int uid)
            throws IOException
    {
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(folder)) {
            for (Path entry : entries) {
                PosixFileAttributes attributes = Files.readAttributes(entry, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                if (!attributes.isRegularFile() || uidOf(entry) != uid) {
                    log.warn("not removing {}: it holds {}, which is not a plain file of this user", folder, entry.getFileName());
                    return false;
                }
                files.add(entry);
            }
        }
        catch (NoSuchFileException gone) {
            return false;
        }
        for (Path file : files) {
            Files.deleteIfExists(file);
        }
        Files.deleteIfExists(folder);
        return true;
    }
}
