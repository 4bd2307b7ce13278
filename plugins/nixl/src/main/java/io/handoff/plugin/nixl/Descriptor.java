package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.PageGeometry;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * What a receiver hands a sender in the handshake: its UCX worker address and, per KV region, where the region
 * lives in the receiver's address space, its page stride and the packed remote key that lets the sender put into
 * it. Binary: {@code "NIXL"}, a version byte, the worker address, the regions; every length is checked on decode,
 * so a truncated or foreign descriptor is refused with a reason instead of being handed to UCX.
 */
record Descriptor(byte[] workerAddress, List<Region> regions)
{
    static final int MAGIC = 0x4e49584c; // "NIXL"
    static final byte VERSION = 1;
    // Bounds that no real UCX address or key comes near; they keep a corrupt length from allocating gigabytes.
    static final int MAX_ADDRESS_BYTES = 1 << 16;
    static final int MAX_RKEY_BYTES = 1 << 16;
    static final int MAX_REGIONS = 1 << 16;

    /** One exposed region: {@code length} bytes at {@code base} in the receiver, pages of {@code pageStride} bytes. */
    record Region(long base, long length, long pageStride, byte[] rkey)
    {
        Region
        {
            requireNonNull(rkey, "rkey is null");
            if (base == 0 || length < 1 || pageStride < 1 || length % pageStride != 0) {
                throw new IllegalArgumentException("region of " + length + " bytes at 0x" + Long.toHexString(base)
                        + " is not a whole number of " + pageStride + "-byte pages");
            }
            if (rkey.length == 0 || rkey.length > MAX_RKEY_BYTES) {
                throw new IllegalArgumentException("remote key of " + rkey.length + " bytes");
            }
            rkey = rkey.clone();
        }

        int pages()
        {
            return Math.toIntExact(length / pageStride);
        }

        @Override
        public boolean equals(Object other)
        {
            return other instanceof Region that && base == that.base && length == that.length && pageStride == that.pageStride
                    && Arrays.equals(rkey, that.rkey);
        }

        @Override
        public int hashCode()
        {
            return Long.hashCode(base) * 31 + Arrays.hashCode(rkey);
        }

        @Override
        public String toString()
        {
            return "Region[base=0x" + Long.toHexString(base) + ", length=" + length + ", pageStride=" + pageStride + ", rkey="
                    + rkey.length + " bytes]";
        }
    }

    Descriptor
    {
        requireNonNull(workerAddress, "workerAddress is null");
        requireNonNull(regions, "regions is null");
        if (workerAddress.length == 0 || workerAddress.length > MAX_ADDRESS_BYTES) {
            throw new IllegalArgumentException("worker address of " + workerAddress.length + " bytes");
        }
        if (regions.isEmpty() || regions.size() > MAX_REGIONS) {
            throw new IllegalArgumentException(regions.size() + " regions");
        }
        workerAddress = workerAddress.clone();
        regions = List.copyOf(regions);
    }

    /** The receiver's regions as a plan's pages must fit them. */
    PageGeometry geometry()
    {
        return new PageGeometry(regions.stream().map(Region::pageStride).toList(), regions.stream().mapToInt(Region::pages).min().orElse(0));
    }

    byte[] encode()
    {
        int size = 4 + 1 + 4 + workerAddress.length + 4;
        for (Region region : regions) {
            size += 3 * 8 + 4 + region.rkey().length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.putInt(MAGIC).put(VERSION).putInt(workerAddress.length).put(workerAddress).putInt(regions.size());
        for (Region region : regions) {
            out.putLong(region.base()).putLong(region.length()).putLong(region.pageStride()).putInt(region.rkey().length).put(region.rkey());
        }
        return out.array();
    }

    /** Decodes a descriptor, or throws IllegalArgumentException saying what is wrong with it. */
    static Descriptor decode(byte[] bytes)
    {
        requireNonNull(bytes, "descriptor is null");
        ByteBuffer in = ByteBuffer.wrap(bytes);
        try {
            int magic = in.getInt();
            if (magic != MAGIC) {
                throw malformed("it does not start with NIXL (0x" + Integer.toHexString(magic) + "); is the receiver using another backend?");
            }
            byte version = in.get();
            if (version != VERSION) {
                throw malformed("version " + version + ", this Handoff reads version " + VERSION + "; run the same Handoff version on both sides");
            }
            byte[] address = new byte[length(in, MAX_ADDRESS_BYTES, "worker address")];
            in.get(address);
            int count = in.getInt();
            if (count < 1 || count > MAX_REGIONS) {
                throw malformed(count + " regions");
            }
            List<Region> regions = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                long base = in.getLong();
                long length = in.getLong();
                long stride = in.getLong();
                byte[] rkey = new byte[length(in, MAX_RKEY_BYTES, "remote key of region " + i)];
                in.get(rkey);
                try {
                    regions.add(new Region(base, length, stride, rkey));
                }
                catch (IllegalArgumentException e) {
                    throw malformed("region " + i + ": " + e.getMessage());
                }
            }
            if (in.hasRemaining()) {
                throw malformed(in.remaining() + " bytes after the last region");
            }
            return new Descriptor(address, regions);
        }
        catch (BufferUnderflowException e) {
            throw malformed("it ends after " + bytes.length + " bytes, in the middle of a field");
        }
    }

    private static int length(ByteBuffer in, int max, String what)
    {
        int length = in.getInt();
        if (length < 1 || length > max) {
            throw malformed(what + " of " + length + " bytes");
        }
        if (length > in.remaining()) {
            throw malformed(what + " of " + length + " bytes, but only " + in.remaining() + " bytes follow");
        }
        return length;
    }

    private static IllegalArgumentException malformed(String reason)
    {
        return new IllegalArgumentException("malformed nixl descriptor: " + reason);
    }
}
