package io.handoff.core.model.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Reads a GGUF file's little-endian header front to back. Every read is checked against the bytes
 * left first, and so is every declared length before anything is allocated for it, so a lying header
 * ends in an {@link IllegalArgumentException} naming the file, never in an out-of-bounds access or an
 * oversized allocation.
 */
final class GgufCursor
{
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path path;
    private final MemorySegment file;
    private long position;

    GgufCursor(Path path, MemorySegment file)
    {
        this.path = path;
        this.file = file;
    }

    long position()
    {
        return position;
    }

    long remaining()
    {
        return file.byteSize() - position;
    }

    int u8(String what)
    {
        need(1, what);
        return file.get(ValueLayout.JAVA_BYTE, position++) & 0xff;
    }

    int u16(String what)
    {
        need(2, what);
        int value = file.get(U16, position) & 0xffff;
        position += 2;
        return value;
    }

    int i32(String what)
    {
        need(4, what);
        int value = file.get(U32, position);
        position += 4;
        return value;
    }

    long u32(String what)
    {
        return i32(what) & 0xffff_ffffL;
    }

    long u64(String what)
    {
        need(8, what);
        long value = file.get(U64, position);
        position += 8;
        return value;
    }

    /** A u64 that must be at most {@code limit}; {@code what} names it in the error. */
    long count(String what, long limit, String limitReason)
    {
        long at = position;
        long value = u64(what);
        if (value < 0 || value > limit) {
            throw fail(what + " at offset " + at + " is " + Long.toUnsignedString(value) + ", more than " + limitReason
                    + "; the file is truncated or corrupt");
        }
        return value;
    }

    String string(String what)
    {
        long length = count(what + " length", remaining() - 8, "the bytes left in the file");
        byte[] bytes = file.asSlice(position, length).toArray(ValueLayout.JAVA_BYTE);
        position += length;
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Moves to the next multiple of {@code alignment}, which may be the end of the file. */
    void align(long alignment, String what)
    {
        long padding = Math.floorMod(-position, alignment);
        need(padding, what);
        position += padding;
    }

    IllegalArgumentException fail(String message)
    {
        return new IllegalArgumentException(path + ": " + message);
    }

    private void need(long bytes, String what)
    {
        if (bytes > remaining()) {
            throw fail(what + " needs " + bytes + " bytes at offset " + position + ", but the file of " + file.byteSize()
                    + " bytes ends there; the file is truncated or not GGUF");
        }
    }
}
