package io.handoff.core.model.gguf;

import java.util.Optional;

/** The metadata value types of GGUF, by their numbers in the file. */
public enum GgufValueType
{
    UINT8(0, 1),
    INT8(1, 1),
    UINT16(2, 2),
    INT16(3, 2),
    UINT32(4, 4),
    INT32(5, 4),
    FLOAT32(6, 4),
    BOOL(7, 1),
    /** A u64 byte length, then that many UTF-8 bytes. */
    STRING(8, 8),
    /** A u32 element type, a u64 count, then the elements. */
    ARRAY(9, 12),
    UINT64(10, 8),
    INT64(11, 8),
    FLOAT64(12, 8);

    private static final GgufValueType[] BY_ID = values();

    private final int id;
    private final int minimumBytes;

    GgufValueType(int id, int minimumBytes)
    {
        this.id = id;
        this.minimumBytes = minimumBytes;
    }

    public int id()
    {
        return id;
    }

    /** The fewest bytes one value of this type takes in a file: what bounds a declared count against the bytes left. */
    int minimumBytes()
    {
        return minimumBytes;
    }

    boolean isInteger()
    {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }

    static Optional<GgufValueType> byId(long id)
    {
        // ids are the declaration order, 0 to 12
        return id >= 0 && id < BY_ID.length ? Optional.of(BY_ID[(int) id]) : Optional.empty();
    }
}
