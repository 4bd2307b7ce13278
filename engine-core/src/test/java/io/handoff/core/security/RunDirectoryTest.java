package io.handoff.core.security;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.spi.attention.KvDtype;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The private folders pool files live in: 0700 at both levels, a pool file 0600 in them, removed on close, and the
 * folders of dead processes removed by the next process to start, without touching anything not plainly theirs.
 */
class RunDirectoryTest
{
    @TempDir
    Path base;

    private static String mode(Path path)
            throws Exception
    {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
    }

    /** The pid of a process that ran and is gone. */
    private static long deadPid()
            throws Exception
    {
        Process process = new ProcessBuilder("true").start();
        process.waitFor();
        process.onExit().get();
        return process.pid();
    }

    @Test
    void aPoolFileIsPrivateInsideAPrivateFolderAndGoneAfterClose()
            throws Exception
    {
        Path file;
        Path folder;
        try (RunDirectory run = RunDirectory.create(base);
                KvPool pool = KvPool.mapShared(new KvGeometry(2, 12, 8, false, KvDtype.F32, 4), 8, run.path().resolve("handoff-kv.pool"))) {
            folder = run.path();
            file = pool.sharedFile().orElseThrow();
            assertThat(run.root()).isEqualTo(base.resolve("handoff-" + RunDirectory.currentUid()));
            assertThat(mode(run.root())).isEqualTo("rwx------");
            assertThat(mode(folder)).isEqualTo("rwx------");
            assertThat(folder.getFileName().toString()).startsWith(ProcessHandle.current().pid() + "-");
            assertThat(mode(file)).isEqualTo("rw-------");
        }
        assertThat(file).doesNotExist();
        assertThat(folder).doesNotExist();
    }

    @Test
    void theFolderOfADeadProcessIsRemovedAtTheNextStartAndNothingElse()
            throws Exception
    {
        Path root = base.resolve("handoff-" + RunDirectory.currentUid());
        Files.createDirectories(root);
        Path dead = Files.createDirectory(root.resolve(deadPid() + "-0badcafe"));
        Files.write(dead.resolve("handoff-kv.pool"), new byte[64]);
        Path live = Files.createDirectory(root.resolve(ProcessHandle.current().pid() + "-00000001"));
        Path unrelated = Files.createDirectory(root.resolve("notes"));
        // a dead process's folder holding a link is left alone, and so is the link's target
        Path target = Files.writeString(base.resolve("target"), "keep");
        Path linked = Files.createDirectory(root.resolve(deadPid() + "-0000beef"));
        Files.createSymbolicLink(linked.resolve("pool"), target);

        try (RunDirectory run = RunDirectory.create(base)) {
            assertThat(dead).doesNotExist();
            assertThat(live).isDirectory();
            assertThat(unrelated).isDirectory();
            assertThat(linked.resolve("pool")).isSymbolicLink();
            assertThat(target).hasContent("keep");
            assertThat(run.path()).isDirectory();
        }
    }

    @Test
    void aUsersFolderOthersMayEnterIsMadePrivate()
            throws Exception
    {
        Path root = Files.createDirectory(base.resolve("handoff-" + RunDirectory.currentUid()),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));

        try (RunDirectory run = RunDirectory.create(base)) {
            assertThat(mode(run.root())).isEqualTo("rwx------");
        }
    }
}
