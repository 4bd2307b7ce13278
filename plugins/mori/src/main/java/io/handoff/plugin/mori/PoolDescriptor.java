package io.handoff.plugin.mori;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * What a decode tells prefills about its exposed pool, as the bytes {@link MoriBackend#expose} returns:
 * where the pool lives (host id and shared file) and each region's place and page geometry in that file.
 * Big-endian, {@link DataOutputStream} encoding:
 * <pre>
 *   int     magic "MORI", byte version (1)
 *   utf     host id of the receiver
 *   utf     absolute path of the pool file
 *   int     regions; per region: long fileOffset, long byteSize, long pageStride
 * </pre>
 */
record PoolDescriptor(String hostId, Path sharedFile, List<Region> regions)
{
    static final int MAGIC = 0x4D4F5249;
    static final byte VERSION = 1;
    private static final int MAX_REGIONS = 1 << 16;

    /** One region as a sender needs it: where it starts in the file, and its page geometry. */
    record Region(long fileOffset, long byteSize, long pageStride)
    {
        Region
        {
            if (fileOffset < 0 || byteSize < 0 || pageStride < 1 || byteSize % pageStride != 0) {
                throw new IllegalArgumentException("region at file offset " + fileOffset + ": " + byteSize
                        + " bytes is not a whole number of " + pageStride + "-byte pages");
            }
        }

        int pages()
        {
            return Math.toIntExact(byteSize / pageStride);
        }

        static Region of(MemoryRegion region)
        {
            if (region.fileOffset() < 0) {
                throw new IllegalArgumentException("region " + region.index() + " is not in the shared file (file offset "
                        + region.fileOffset() + "); mori writes into the decode pool's shared file");
            }
            return new Region(region.fileOffset(), region.segment().byteSize(), region.pageStride());
        }
    }

    PoolDescriptor
    {
        requireNonNull(hostId, "hostId is null");
        requireNonNull(sharedFile, "sharedFile is null");
        regions = List.copyOf(regions);
    }

    /** The receiver's regions as a plan's pages must fit them. */
    PageGeometry geometry()
    {
        return new PageGeometry(regions.stream().map(Region::pageStride).toList(), regions.stream().mapToInt(Region::pages).min().orElse(0));
    }

    byte[] encode()
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 24 * regions.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            out.writeUTF(hostId);
            out.writeUTF(sharedFile.toString());
            out.writeInt(regions.size());
            for (Region region : regions) {
                out.writeLong(region.fileOffset());
                out.writeLong(region.byteSize());
                out.writeLong(region.pageStride());
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static PoolDescriptor decode(byte[] descriptor)
    {
        requireNonNull(descriptor, "descriptor is null");
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(descriptor))) {
            if (descriptor.length < 5 || in.readInt() != MAGIC) {
                throw new IllegalArgumentException("not a mori descriptor (" + descriptor.length
                        + " bytes); do both sides use transfer backend mori?");
            }
            byte version = in.readByte();
            if (version != VERSION) {
                throw new IllegalArgumentException("mori descriptor version " + version + ", this Handoff reads version " + VERSION
                        + "; run the same Handoff version on both sides");
            }
            String hostId = in.readUTF();
            Path sharedFile = Path.of(in.readUTF());
            int count = in.readInt();
            if (count < 0 || count > MAX_REGIONS) {
                throw new IllegalArgumentException("mori descriptor names " + count + " regions");
            }
            List<Region> regions = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                regions.add(new Region(in.readLong(), in.readLong(), in.readLong()));
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException("mori descriptor has " + in.available() + " trailing bytes");
            }
            return new PoolDescriptor(hostId, sharedFile, regions);
        }
        catch (IOException e) {
            throw new IllegalArgumentException("truncated mori descriptor (" + descriptor.length + " bytes)", e);
        }
    }
}
