package io.handoff.core.model.gguf;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One metadata value as the file typed it. {@code value} is an {@link Integer} for the 8-, 16-bit and
 * INT32 types (UINT8 and UINT16 as their unsigned values), a {@link Long} for UINT32, INT64 and UINT64
 * (UINT64 as its raw bits: above {@link Long#MAX_VALUE} it reads negative), a {@link Float}, a
 * {@link Double}, a {@link Boolean}, a {@link String}, or for ARRAY a {@link GgufArray}.
 */
public record GgufValue(GgufValueType type, Object value)
{
    public GgufValue
    {
        requireNonNull(type, "type is null");
        requireNonNull(value, "value is null");
    }

    /** The elements of an ARRAY value, all of {@code elementType} (which may itself be ARRAY). */
    public record GgufArray(GgufValueType elementType, List<GgufValue> elements)
    {
        public GgufArray
        {
            requireNonNull(elementType, "elementType is null");
            elements = List.copyOf(elements);
        }
    }

    /** The type as a person reads it in an error: {@code UINT32}, {@code ARRAY of STRING}. */
    public String typeName()
    {
        return value instanceof GgufArray array ? "ARRAY of " + array.elementType() : type.name();
    }
}
