package io.handoff.core.model.gguf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reads the key/value section of a GGUF header into {@link GgufValue}s. */
final class GgufMetadataReader
{
    /** Arrays of arrays nest at most this deep: real files use one level; a deeper chain is only a way to overflow the stack. */
    static final int MAX_ARRAY_DEPTH = 8;
    /**
     * Array elements accepted in one file, all arrays together. Each becomes a Java object of a few
     * dozen bytes from as little as one byte of file, so without a cap a large file of small elements
     * would exhaust the heap; the largest real tokenizers (256k tokens, their types and scores, and
     * merges) hold under 1.5M.
     */
    static final long MAX_ARRAY_ELEMENTS = 1L << 23;

    private final GgufCursor cursor;
    private long elementsLeft = MAX_ARRAY_ELEMENTS;

    private GgufMetadataReader(GgufCursor cursor)
    {
        this.cursor = cursor;
    }

    static Map<String, GgufValue> read(GgufCursor cursor, long count)
    {
        return new GgufMetadataReader(cursor).read(count);
    }

    private Map<String, GgufValue> read(long count)
    {
        Map<String, GgufValue> values = new LinkedHashMap<>();
        for (long i = 0; i < count; i++) {
            String key = cursor.string("metadata key " + i);
            GgufValueType type = type(cursor, "metadata key '" + key + "'");
            if (values.put(key, value(key, type, 0)) != null) {
                throw cursor.fail("metadata key '" + key + "' appears twice; the file is corrupt");
            }
        }
        return values;
    }

    private static GgufValueType type(GgufCursor cursor, String what)
    {
        long id = cursor.u32(what + " value type");
        return GgufValueType.byId(id).orElseThrow(() -> cursor.fail(what + " has value type " + id
                + ", which GGUF does not define (0 to 12); the file is corrupt or from a newer GGUF version"));
    }

    private GgufValue value(String key, GgufValueType type, int depth)
    {
        String what = "metadata key '" + key + "'";
        Object value = switch (type) {
            case UINT8 -> cursor.u8(what);
            case INT8 -> (int) (byte) cursor.u8(what);
            case UINT16 -> cursor.u16(what);
            case INT16 -> (int) (short) cursor.u16(what);
            case UINT32 -> cursor.u32(what);
            case INT32 -> cursor.i32(what);
            case FLOAT32 -> Float.intBitsToFloat(cursor.i32(what));
            case BOOL -> bool(cursor, what);
            case STRING -> cursor.string(what);
            case UINT64, INT64 -> cursor.u64(what);
            case FLOAT64 -> Double.longBitsToDouble(cursor.u64(what));
            case ARRAY -> array(key, depth);
        };
        return new GgufValue(type, value);
    }

    private static boolean bool(GgufCursor cursor, String what)
    {
        int b = cursor.u8(what);
        if (b > 1) {
            throw cursor.fail(what + " is a BOOL of byte " + b + "; a GGUF bool is 0 or 1");
        }
        return b == 1;
    }

    private GgufValue.GgufArray array(String key, int depth)
    {
        String what = "metadata key '" + key + "'";
        if (depth >= MAX_ARRAY_DEPTH) {
            throw cursor.fail(what + " nests arrays more than " + MAX_ARRAY_DEPTH + " deep; the file is corrupt");
        }
        GgufValueType elementType = type(cursor, what + " array element");
        long limit = (cursor.remaining() - 8) / elementType.minimumBytes();
        long count = cursor.count(what + " array count", limit, "the " + limit + " " + elementType + " elements the rest of the file can hold");
        if (count > elementsLeft) {
            throw cursor.fail(what + " holds " + count + " array elements, more than the " + MAX_ARRAY_ELEMENTS
                    + " the engine reads from one file's metadata (all arrays together); the file is corrupt or not a model");
        }
        elementsLeft -= count;
        List<GgufValue> elements = new ArrayList<>((int) Math.min(count, 1 << 16));
        for (long i = 0; i < count; i++) {
            elements.add(value(key, elementType, depth + 1));
        }
        return new GgufValue.GgufArray(elementType, elements);
    }
}
