package io.handoff.core.model.hf;

import java.math.BigDecimal;
import java.util.Map;

/** Typed, bounded reads of config.json's fields, each error naming the file and the field. */
record ConfigFields(Map<String, Object> config, String source)
{
    /** Present and not {@code null}: Transformers writes {@code "head_dim": null} for "derive it". */
    boolean has(String key)
    {
        return config.get(key) != null;
    }

    int positiveInt(String key)
    {
        Object value = config.get(key);
        if (value == null) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" is missing; it is required");
        }
        if (!(value instanceof Long n) || n < 1 || n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be an integer from 1 to " + Integer.MAX_VALUE
                    + ", was " + value);
        }
        return (int) (long) n;
    }

    double positiveDouble(String key)
    {
        Object value = config.get(key);
        double d = switch (value) {
            case Long n -> n;
            case BigDecimal n -> n.doubleValue();
            case null, default -> Double.NaN;
        };
        if (!(d > 0) || Double.isInfinite(d)) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be a positive finite number, was " + value);
        }
        return d;
    }

    boolean bool(String key, boolean fallback)
    {
        Object value = config.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Boolean b)) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be true or false, was " + value);
        }
        return b;
    }

    String string(String key, String fallback)
    {
        Object value = config.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof String s)) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be a string, was " + value);
        }
        return s;
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> objectOrEmpty(String key)
    {
        Object value = config.get(key);
        if (value == null) {
            return Map.of();
        }
        if (!(value instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be an object or null, was " + value);
        }
        return (Map<String, Object>) map;
    }

    /** An integer within int range, {@code fallback} when absent or {@code null}; the caller checks its range. */
    int intOr(String key, int fallback)
    {
        Object value = config.get(key);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Long n) || n != (int) (long) n) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be an integer, was " + value);
        }
        return (int) (long) n;
    }

    /** A finite number, {@code fallback} when absent or {@code null}; the caller checks its range. */
    double numberOr(String key, double fallback)
    {
        Object value = config.get(key);
        double d = switch (value) {
            case null -> fallback;
            case Long n -> n;
            case BigDecimal n -> n.doubleValue();
            default -> Double.NaN;
        };
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException(source + ": \"" + key + "\" must be a finite number, was " + value);
        }
        return d;
    }
}
