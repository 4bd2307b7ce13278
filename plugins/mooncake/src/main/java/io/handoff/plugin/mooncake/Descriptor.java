package io.handoff.plugin.mooncake;

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
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a receiver tells senders about its exposed pool, as the bytes {@link MooncakeBackend#expose} returns.
 * Big-endian, {@link java.io.DataOutputStream} encoding:
 * <pre>
 *   byte    version (1)
 *   utf     host id of the receiver
 *   utf     host to dial, int port
 *   long    the receiver's max frame bytes
 *   bool    has shared file; if so: utf path
 *   int     regions; per region: long fileOffset (-1 without a shared file), long byteSize, long pageStride
 * </pre>
 */
record Descriptor(String hostId, String host, int port, long maxFrameBytes, Optional<Path> sharedFile, List<Shape> regions)
{
    static final byte VERSION = 1;
    private static final int MAX_REGIONS = 1 << 16;

    /** A region as the sender needs to know it: where it is in the shared file, and its page geometry. */
    record Shape(long fileOffset, long byteSize, long pageStride)
    {
        Shape
        {
            if (byteSize < 0 || pageStride < 1 || byteSize % pageStride != 0) {
                throw new IllegalArgumentException(byteSize + " bytes is not a whole number of " + pageStride + "-byte pages");
            }
        }

        int pages()
        {
            return Math.toIntExact(byteSize / pageStride);
        }

        static Shape of(MemoryRegion region)
        {
            return new Shape(region.fileOffset(), region.segment().byteSize(), region.pageStride());
        }
    }

    Descriptor
    {
        requireNonNull(hostId, "hostId is null");
        requireNonNull(host, "host is null");
        requireNonNull(sharedFile, "sharedFile is null");
        regions = List.copyOf(regions);
        if (port < 0 || port > 0xFFFF) {
            throw new IllegalArgumentException("port " + port + " is not a TCP port");
        }
        if (sharedFile.isPresent()) {
            for (int i = 0; i < regions.size(); i++) {
                if (regions.get(i).fileOffset() < 0) {
                    throw new IllegalArgumentException("region " + i + " has no offset in the shared file " + sharedFile.get());
                }
            }
        }
    }

    /** The receiver's regions as a plan's pages must fit them. */
    PageGeometry geometry()
    {
        return new PageGeometry(regions.stream().map(Shape::pageStride).toList(), regions.stream().mapToInt(Shape::pages).min().orElse(0));
    }

    byte[] encode()
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 24 * regions.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(hostId);
            out.writeUTF(host);
            out.writeInt(port);
            out.writeLong(maxFrameBytes);
            out.writeBoolean(sharedFile.isPresent());
            if (sharedFile.isPresent()) {
                out.writeUTF(sharedFile.get().toString());
            }
            out.writeInt(regions.size());
            for (Shape region : regions) {
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

    static Descriptor decode(byte[] descriptor)
    {
        requireNonNull(descriptor, "descriptor is null");
        if (descriptor.length == 0 || descriptor[0] != VERSION) {
            throw new IllegalArgumentException("not a mooncake descriptor of version " + VERSION + " (first byte "
                    + (descriptor.length == 0 ? "missing" : descriptor[0]) + "); are both sides running the same Handoff version?");
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(descriptor))) {
            in.readByte();
            String hostId = in.readUTF();
            String host = in.readUTF();
            int port = in.readInt();
            long maxFrameBytes = in.readLong();
            Optional<Path> sharedFile = in.readBoolean() ? Optional.of(Path.of(in.readUTF())) : Optional.empty();
            int count = in.readInt();
            if (count < 0 || count > MAX_REGIONS) {
                throw new IllegalArgumentException("mooncake descriptor names " + count + " regions");
            }
            List<Shape> regions = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                regions.add(new Shape(in.readLong(), in.readLong(), in.readLong()));
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException("mooncake descriptor has " + in.available() + " trailing bytes");
            }
            return new Descriptor(hostId, host, port, maxFrameBytes, sharedFile, regions);
        }
        catch (IOException e) {
            throw new IllegalArgumentException("truncated mooncake descriptor (" + descriptor.length + " bytes)", e);
        }
    }
}
