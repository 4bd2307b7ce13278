package io.handoff.core.transfer;

import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.SharedPoolMapping;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.nio.file.StandardOpenOption.READ;
import static java.nio.file.StandardOpenOption.WRITE;
import static java.util.Objects.requireNonNull;

/**
 * The one codec for a receiver's pool as senders see it, and the one place that maps a same-host receiver's pool file
 * (what {@link io.handoff.spi.transfer.TransferContext#describePool}, {@code readPool} and {@code mapSharedPool} do for
 * every backend). Big-endian, {@link DataOutputStream} encoding, bounded on reading:
 * <pre>
 *   int     magic "HPOL", byte version (1)
 *   utf     host id of the receiver
 *   bool    has a shared file; utf absolute path of it
 *   int     regions; per region: long fileOffset (-1 without a shared file), long byteSize, long pageStride
 * </pre>
 */
public final class PoolDescriptions
{
    static final int MAGIC = 0x48504F4C;
    static final byte VERSION = 1;
    static final int MAX_REGIONS = 1 << 16;

    private record Shape(long fileOffset, long byteSize, long pageStride) {}

    private record Decoded(PoolDescription description, List<Shape> shapes) {}

    private PoolDescriptions() {}

    public static byte[] describe(String hostId, List<MemoryRegion> regions, Path sharedFile)
    {
        requireNonNull(hostId, "hostId is null");
        PageGeometry.of(regions);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 24 * regions.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            out.writeUTF(hostId);
            out.writeBoolean(sharedFile != null);
            if (sharedFile != null) {
                out.writeUTF(sharedFile.toAbsolutePath().toString());
            }
            out.writeInt(regions.size());
            for (MemoryRegion region : regions) {
                if (sharedFile != null && region.fileOffset() < 0) {
                    throw new IllegalArgumentException("region " + region.index() + " has no offset in the shared file " + sharedFile);
                }
                out.writeLong(sharedFile == null ? -1 : region.fileOffset());
                out.writeLong(region.segment().byteSize());
                out.writeLong(region.pageStride());
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static PoolDescription read(byte[] description)
    {
        return decode(description).description();
    }

    /**
     * Maps the described pool's file read-write, one segment per region, in a shared arena the mapping closes. The file
     * is a grant, not a name to trust: it must lie inside {@code allowedRoot} (the engine's own run directory, where a
     * receiver of this user created it) with no link on the way, be a plain file of this user that nobody else may
     * read or write, and be exactly as large as its regions; it is opened without following links and checked again
     * after opening, so a file swapped in between is refused too. Anything else is a {@link PoolGrantRefused}, and
     * the file is not touched.
     */
    public static SharedPoolMapping map(String localHostId, byte[] description, Path allowedRoot)
    {
        requireNonNull(allowedRoot, "allowedRoot is null");
        Decoded decoded = decode(description);
        PoolDescription pool = decoded.description();
        if (!pool.hostId().equals(localHostId)) {
            throw new IllegalArgumentException("the receiver's pool is on host " + pool.hostId() + ", not this one (" + localHostId
                    + "); shared memory works only between processes on one host");
        }
        Path file = pool.sharedFile().orElseThrow(() -> new IllegalArgumentException(
                "the receiver's pool is not a shared file; its backend must ask for shared file memory"));
        long needed = 0;
        for (Shape shape : decoded.shapes()) {
            needed = Math.max(needed, shape.fileOffset() + shape.byteSize());
        }
        PoolFileGrant grant = PoolFileGrant.check(file, allowedRoot, needed);
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, READ, WRITE, LinkOption.NOFOLLOW_LINKS)) {
            grant.recheck(channel);
            List<MemoryRegion> regions = new ArrayList<>(decoded.shapes().size());
            for (int i = 0; i < decoded.shapes().size(); i++) {
                Shape shape = decoded.shapes().get(i);
                MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, shape.fileOffset(), shape.byteSize(), arena);
                // Fault the mapping in now, by reading it: a page first touched by a plan's copy costs a page fault on the
                // transfer path, which measured 3 to 5 times slower than the copy itself (docs/disaggregation.md, transfer backends).
                segment.load();
                regions.add(new MemoryRegion(i, segment, shape.pageStride(), shape.fileOffset()));
            }
            return new Mapping(pool, List.copyOf(regions), arena);
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot map the receiver's pool file " + file + ": " + e.getMessage()
                    + "; is the decode running on this host and its pool still there?", e);
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static Decoded decode(byte[] description)
    {
        requireNonNull(description, "description is null");
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(description))) {
            int magic = in.readInt();
            byte version = in.readByte();
            if (magic != MAGIC || version != VERSION) {
                throw new IllegalArgumentException("not a pool description of version " + VERSION + "; are both sides running the same "
                        + "Handoff version?");
            }
            String hostId = in.readUTF();
            Optional<Path> sharedFile = in.readBoolean() ? Optional.of(Path.of(in.readUTF())) : Optional.empty();
            int count = in.readInt();
            if (count < 0 || count > MAX_REGIONS) {
                throw new IllegalArgumentException("a pool description names " + count + " regions (at most " + MAX_REGIONS + ")");
            }
            List<Shape> shapes = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                Shape shape = new Shape(in.readLong(), in.readLong(), in.readLong());
                if (shape.byteSize() < 0 || shape.pageStride() < 1 || shape.byteSize() % shape.pageStride() != 0
                        || (sharedFile.isPresent() && shape.fileOffset() < 0)) {
                    throw new IllegalArgumentException("region " + i + " of a pool description: " + shape.byteSize() + " bytes at file offset "
                            + shape.fileOffset() + " is not a whole number of " + shape.pageStride() + "-byte pages in the file");
                }
                if (shape.byteSize() / shape.pageStride() > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("region " + i + " of a pool description has " + shape.byteSize() / shape.pageStride()
                            + " pages of " + shape.pageStride() + " bytes, more than a pool can index (" + Integer.MAX_VALUE + ")");
                }
                shapes.add(shape);
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException("a pool description has " + in.available() + " trailing bytes");
            }
            PageGeometry geometry = new PageGeometry(shapes.stream().map(Shape::pageStride).toList(),
                    shapes.stream().mapToLong(s -> s.byteSize() / s.pageStride()).mapToInt(Math::toIntExact).min().orElse(0));
            return new Decoded(new PoolDescription(hostId, sharedFile, geometry), shapes);
        }
        catch (IOException e) {
            throw new IllegalArgumentException("truncated pool description (" + description.length + " bytes)", e);
        }
    }

    private record Mapping(PoolDescription description, List<MemoryRegion> regions, Arena arena)
            implements SharedPoolMapping
    {
        @Override
        public void close()
        {
            if (arena.scope().isAlive()) {
                arena.close();
            }
        }
    }
}
