package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PoolDescription;
import io.handoff.spi.transfer.TransferContext;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a receiver tells senders, as the bytes {@link MooncakeBackend#expose} returns: where to dial, and the core's
 * description of the pool ({@link TransferContext#describePool}: host, shared file, regions). Big-endian,
 * {@link DataOutputStream} encoding:
 * <pre>
 *   byte    version (2)
 *   utf     host to dial, int port
 *   long    the receiver's max frame bytes
 *   int     length of the pool description, then its bytes
 * </pre>
 */
record Descriptor(String host, int port, long maxFrameBytes, byte[] pool, PoolDescription description)
{
    static final byte VERSION = 2;
    private static final int MAX_POOL_BYTES = 8 << 20;

    Descriptor
    {
        requireNonNull(host, "host is null");
        requireNonNull(pool, "pool is null");
        requireNonNull(description, "description is null");
        if (port < 0 || port > 0xFFFF) {
            throw new IllegalArgumentException("port " + port + " is not a TCP port");
        }
    }

    String hostId()
    {
        return description.hostId();
    }

    Optional<Path> sharedFile()
    {
        return description.sharedFile();
    }

    /** The receiver's regions as a plan's pages must fit them. */
    PageGeometry geometry()
    {
        return description.geometry();
    }

    byte[] encode()
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(32 + pool.length);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(host);
            out.writeInt(port);
            out.writeLong(maxFrameBytes);
            out.writeInt(pool.length);
            out.write(pool);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static Descriptor decode(byte[] descriptor, TransferContext context)
    {
        requireNonNull(descriptor, "descriptor is null");
        if (descriptor.length == 0 || descriptor[0] != VERSION) {
            throw new IllegalArgumentException("not a mooncake descriptor of version " + VERSION + " (first byte "
                    + (descriptor.length == 0 ? "missing" : descriptor[0]) + "); are both sides running the same Handoff version?");
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(descriptor))) {
            in.readByte();
            String host = in.readUTF();
            int port = in.readInt();
            long maxFrameBytes = in.readLong();
            int length = in.readInt();
            if (length < 0 || length > MAX_POOL_BYTES || length != in.available()) {
                throw new IllegalArgumentException("mooncake descriptor announces a " + length + "-byte pool description, and "
                        + in.available() + " bytes follow");
            }
            byte[] pool = in.readNBytes(length);
            return new Descriptor(host, port, maxFrameBytes, pool, context.readPool(pool));
        }
        catch (IOException e) {
            throw new IllegalArgumentException("truncated mooncake descriptor (" + descriptor.length + " bytes)", e);
        }
    }
}
