package io.handoff.core.model.gguf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * A GGUF file's metadata with typed reads. A read of the wrong type fails naming the file, the key,
 * the type found and the type wanted; integers of any width read as {@code long} or {@code int}
 * (range-checked), and floats of either width as {@code double}.
 */
public final class GgufMetadata
{
    private final Path path;
    private final Map<String, GgufValue> values;

    GgufMetadata(Path path, Map<String, GgufValue> values)
    {
        this.path = path;
        this.values = Collections.unmodifiableMap(values);
    }

    /** Every key and value, in file order. */
    public Map<String, GgufValue> values()
    {
        return values;
    }

    public boolean contains(String key)
    {
        return values.containsKey(key);
    }

    public Optional<GgufValue> get(String key)
    {
        return Optional.ofNullable(values.get(requireNonNull(key, "key is null")));
    }

    public String string(String key)
    {
        return optionalString(key).orElseThrow(() -> missing(key, "STRING"));
    }

    public Optional<String> optionalString(String key)
    {
        return get(key).map(v -> switch (v.value()) {
            case String s when v.type() == GgufValueType.STRING -> s;
            default -> throw wrongType(key, v, "STRING");
        });
    }

    /** Any integer type; a UINT64 above {@link Long#MAX_VALUE} is refused. */
    public long integer(String key)
    {
        return optionalInteger(key).orElseThrow(() -> missing(key, "an integer"));
    }

    public Optional<Long> optionalInteger(String key)
    {
        return get(key).map(v -> integer(key, v));
    }

    /** An integer that must fit an {@code int} and lie within [min, max]. */
    public int intValue(String key, int min, int max)
    {
        return optionalInt(key, min, max).orElseThrow(() -> missing(key, "an integer"));
    }

    public Optional<Integer> optionalInt(String key, int min, int max)
    {
        return optionalInteger(key).map(n -> {
            if (n < min || n > max) {
                throw new IllegalArgumentException(path + ": metadata key '" + key + "' is " + n + ", outside " + min + " to " + max
                        + "; the file is corrupt or describes a model this engine cannot run");
            }
            return (int) (long) n;
        });
    }

    /** FLOAT32 or FLOAT64. */
    public Optional<Double> optionalNumber(String key)
    {
        return get(key).map(v -> switch (v.value()) {
            case Float f -> (double) f;
            case Double d -> d;
            default -> throw wrongType(key, v, "FLOAT32 or FLOAT64");
        });
    }

    public Optional<Boolean> optionalBool(String key)
    {
        return get(key).map(v -> switch (v.value()) {
            case Boolean b -> b;
            default -> throw wrongType(key, v, "BOOL");
        });
    }

    /** An ARRAY of STRING. */
    public Optional<List<String>> optionalStrings(String key)
    {
        return get(key).map(v -> {
            List<String> out = new ArrayList<>();
            for (GgufValue e : array(key, v, GgufValueType.STRING).elements()) {
                out.add((String) e.value());
            }
            return List.copyOf(out);
        });
    }

    /** An ARRAY of any integer type, each element within int range. */
    public Optional<List<Integer>> optionalInts(String key)
    {
        return get(key).map(v -> {
            GgufValue.GgufArray array = array(key, v, null);
            List<Integer> out = new ArrayList<>(array.elements().size());
            for (GgufValue e : array.elements()) {
                long n = integer(key, e);
                if (n != (int) n) {
                    throw new IllegalArgumentException(path + ": metadata key '" + key + "' holds " + n + ", outside int range");
                }
                out.add((int) n);
            }
            return List.copyOf(out);
        });
    }

    /** An ARRAY of FLOAT32, or of an integer type (llama.cpp reads {@code tokenizer.ggml.scores} as either). */
    public Optional<List<Float>> optionalFloats(String key)
    {
        return get(key).map(v -> {
            if (!(v.value() instanceof GgufValue.GgufArray array)
                    || !(array.elementType() == GgufValueType.FLOAT32 || array.elementType().isInteger())) {
                throw wrongType(key, v, "ARRAY of FLOAT32 or of an integer type");
            }
            List<Float> out = new ArrayList<>(array.elements().size());
            for (GgufValue e : array.elements()) {
                out.add(((Number) e.value()).floatValue());
            }
            return List.copyOf(out);
        });
    }

    private GgufValue.GgufArray array(String key, GgufValue v, GgufValueType elementType)
    {
        if (!(v.value() instanceof GgufValue.GgufArray array)
                || (elementType != null ? array.elementType() != elementType : !array.elementType().isInteger())) {
            throw wrongType(key, v, "ARRAY of " + (elementType != null ? elementType : "an integer type"));
        }
        return array;
    }

    private long integer(String key, GgufValue v)
    {
        if (!v.type().isInteger()) {
            throw wrongType(key, v, "an integer");
        }
        long n = ((Number) v.value()).longValue();
        if (v.type() == GgufValueType.UINT64 && n < 0) {
            throw new IllegalArgumentException(path + ": metadata key '" + key + "' is the UINT64 " + Long.toUnsignedString(n)
                    + ", too large for any count or size this engine reads; the file is corrupt");
        }
        return n;
    }

    private IllegalArgumentException wrongType(String key, GgufValue v, String wanted)
    {
        return new IllegalArgumentException(path + ": metadata key '" + key + "' is " + v.typeName() + ", expected " + wanted
                + "; the file was written by an incompatible converter or is corrupt");
    }

    private IllegalArgumentException missing(String key, String wanted)
    {
        return new IllegalArgumentException(path + ": metadata key '" + key + "' (" + wanted + ") is missing; "
                + "convert the model with a llama.cpp convert_hf_to_gguf.py that writes it");
    }
}
