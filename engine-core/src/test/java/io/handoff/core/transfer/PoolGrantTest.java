package io.handoff.core.transfer;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.KvRegion;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.SharedPoolMapping;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A descriptor's pool file is a grant, not a name: the sender maps only a private plain file of its own user, inside
 * its engine's run directory, of the size the regions need. A descriptor naming anything else is refused and the
 * file it names is not touched (its bytes and modification time stay as they were).
 */
class PoolGrantTest
{
    private static final KvGeometry GEOMETRY = new KvGeometry(2, 12, 8, false, KvDtype.F32, 4);
    private static final int PAGES = 16;

    @TempDir
    Path dir;
    private Path root;
    private Path outside;

    @BeforeEach
    void folders()
            throws Exception
    {
        root = Files.createDirectory(dir.resolve("run"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Files.createDirectory(root.resolve("123-0badcafe"));
        outside = Files.createDirectory(dir.resolve("elsewhere"));
    }

    @Test
    void aPoolFileTheReceiverCreatedInTheRunDirectoryIsMapped()
            throws Exception
    {
        Path file = root.resolve("123-0badcafe").resolve("pool");
        try (KvPool pool = KvPool.mapShared(GEOMETRY, PAGES, file);
                SharedPoolMapping mapping = PoolDescriptions.map("host-a", PoolDescriptions.describe("host-a", regions(pool), file), root)) {
            assertThat(mapping.regions()).hasSize(pool.regions().size());
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        }
    }

    @Test
    void aDescriptorNamingAFileOutsideTheRunDirectoryIsRefusedAndTheFileIsUntouched()
            throws Exception
    {
        Path victim = victim(outside.resolve("victim"));
        assertRefusedUntouched(victim, victim, "is not inside this engine's run directory");
        // and no spelling with '..' gets out either
        assertRefusedUntouched(root.resolve("123-0badcafe").resolve("..").resolve("..").resolve("elsewhere").resolve("victim"), victim,
                "is not inside this engine's run directory");
    }

    @Test
    void aLinkInTheRunDirectoryToAnotherFileIsRefusedAndItsTargetIsUntouched()
            throws Exception
    {
        Path victim = victim(outside.resolve("victim"));
        Path link = Files.createSymbolicLink(root.resolve("123-0badcafe").resolve("pool"), victim);

        assertRefusedUntouched(link, victim, "link");
    }

    @Test
    void aPoolFileOthersMayReadIsRefused()
            throws Exception
    {
        Path file = victim(root.resolve("123-0badcafe").resolve("pool"));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));

        assertRefusedUntouched(file, file, "open to group or others");
    }

    @Test
    void aPoolFileLargerThanItsRegionsIsRefused()
            throws Exception
    {
        Path file = victim(root.resolve("123-0badcafe").resolve("pool"));
        Files.write(file, new byte[(int) GEOMETRY.footprintBytes(PAGES) + 4096]);
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_000_000));

        assertRefusedUntouched(file, file, "which has");
    }

    // a file with the pool's size and recognisable bytes, private, with an old modification time
    private static Path victim(Path file)
            throws Exception
    {
        byte[] bytes = new byte[(int) GEOMETRY.footprintBytes(PAGES)];
        Arrays.fill(bytes, (byte) 0x5a);
        Files.write(file, bytes);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_000_000));
        return file;
    }

    private void assertRefusedUntouched(Path named, Path target, String why)
            throws Exception
    {
        byte[] before = Files.readAllBytes(target);
        FileTime modified = Files.getLastModifiedTime(target);
        try (KvPool shape = KvPool.allocate(GEOMETRY, PAGES)) {
            byte[] description = PoolDescriptions.describe("host-a", fileRegions(shape), named);

            assertThatThrownBy(() -> PoolDescriptions.map("host-a", description, root)).isInstanceOf(PoolGrantRefused.class)
                    .hasMessageContaining(why);
        }
        assertThat(Files.readAllBytes(target)).isEqualTo(before);
        assertThat(Files.getLastModifiedTime(target)).isEqualTo(modified);
    }

    // an anonymous pool's shapes, laid out as a shared file would hold them
    private static List<MemoryRegion> fileRegions(KvPool pool)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        long offset = 0;
        for (KvRegion region : pool.regions()) {
            regions.add(new MemoryRegion(regions.size(), region.segment(), region.pageStride(), offset));
            offset += KvGeometry.REGION_ALIGNMENT * ((region.segment().byteSize() + KvGeometry.REGION_ALIGNMENT - 1) / KvGeometry.REGION_ALIGNMENT);
        }
        return regions;
    }

    private static List<MemoryRegion> regions(KvPool pool)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (KvRegion region : pool.regions()) {
            regions.add(new MemoryRegion(regions.size(), region.segment(), region.pageStride(), region.fileOffset()));
        }
        return regions;
    }
}
