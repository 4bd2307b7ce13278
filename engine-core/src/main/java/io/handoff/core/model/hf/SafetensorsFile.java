package io.handoff.core.model.hf;

import io.handoff.core.json.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One {@code .safetensors} file, memory-mapped read-only into its own shared {@link Arena}: an 8-byte
 * little-endian header length {@code n}, {@code n} bytes of JSON header, then the data section. Every
 * tensor entry is checked against the file before anything is exposed (dtype supported, shape
 * non-negative, {@code data_offsets} inside the data section, sized exactly for the shape, no two
 * tensors overlapping), so a tensor's {@link SafetensorsTensor#data()} never reaches outside the file.
 * Nothing is copied onto the heap until a caller converts a tensor. A checkpoint is treated as
 * immutable: a file truncated by another process while it is mapped faults on access (an
 * {@link InternalError}), which no check at open time can prevent.
 */
public final class SafetensorsFile
        implements AutoCloseable
{
    /** The largest header accepted; real headers are kilobytes to a few megabytes. */
    public static final int MAX_HEADER_BYTES = 100 * 1024 * 1024;

    private static final String METADATA = "__metadata__";
    private static final Set<String> ENTRY_FIELDS = Set.of("dtype", "shape", "data_offsets");

    private final Path path;
    private final Arena arena;
    private final Map<String, SafetensorsTensor> tensors;
    private final Map<String, String> metadata;

    private SafetensorsFile(Path path, Arena arena, Map<String, SafetensorsTensor> tensors, Map<String, String> metadata)
    {
        this.path = path;
        this.arena = arena;
        this.tensors = tensors;
        this.metadata = metadata;
    }

    /** Maps and validates {@code path}; throws {@link IllegalArgumentException} naming the file when it is malformed. */
    public static SafetensorsFile open(Path path)
    {
        requireNonNull(path, "path is null");
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < 8) {
                throw new IllegalArgumentException(path + ": " + size + " bytes is too short for a safetensors file"
                        + " (it starts with an 8-byte header length); the file is truncated or not safetensors");
            }
            MemorySegment file = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            SafetensorsFile opened = parse(path, arena, file);
            return opened;
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot read safetensors file " + path + ": " + e.getMessage(), e);
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static SafetensorsFile parse(Path path, Arena arena, MemorySegment file)
    {
        long size = file.byteSize();
        long headerLength = file.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        if (headerLength < 2 || headerLength > size - 8 || headerLength > MAX_HEADER_BYTES) {
            throw new IllegalArgumentException(path + ": header length " + Long.toUnsignedString(headerLength)
                    + " is impossible: it must be at least 2, at most the " + (size - 8) + " bytes after the length field and at most "
                    + MAX_HEADER_BYTES + "; the file is truncated, corrupt or not safetensors");
        }
        byte[] headerBytes = file.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE);
        Object header = Json.parse(headerBytes, MAX_HEADER_BYTES, path + " (safetensors header)");
        if (!(header instanceof Map<?, ?> entries)) {
            throw new IllegalArgumentException(path + ": the safetensors header must be a JSON object of tensors, was " + kind(header));
        }
        MemorySegment data = file.asSlice(8 + headerLength);
        Map<String, SafetensorsTensor> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = Map.of();
        for (Map.Entry<?, ?> entry : entries.entrySet()) {
            String name = (String) entry.getKey();
            if (name.equals(METADATA)) {
                metadata = metadata(path, entry.getValue());
                continue;
            }
            tensors.put(name, tensor(path, name, entry.getValue(), data));
        }
        refuseOverlaps(path, data, tensors.values());
        return new SafetensorsFile(path, arena, Collections.unmodifiableMap(tensors), metadata);
    }

    private static Map<String, String> metadata(Path path, Object value)
    {
        if (!(value instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(path + ": " + METADATA + " must be an object of strings, was " + kind(value));
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw new IllegalArgumentException(path + ": " + METADATA + " entry '" + e.getKey() + "' must be a string, was "
                        + kind(e.getValue()));
            }
            metadata.put((String) e.getKey(), s);
        }
        return Collections.unmodifiableMap(metadata);
    }

    private static SafetensorsTensor tensor(Path path, String name, Object value, MemorySegment data)
    {
        String where = path + ": tensor '" + name + "'";
        if (!(value instanceof Map<?, ?> entry)) {
            throw new IllegalArgumentException(where + " must be an object with dtype, shape and data_offsets, was " + kind(value));
        }
        if (!entry.keySet().equals(ENTRY_FIELDS)) {
            throw new IllegalArgumentException(where + " has fields " + entry.keySet() + "; a safetensors entry has exactly "
                    + "dtype, shape and data_offsets");
        }
        if (!(entry.get("dtype") instanceof String dtypeName)) {
            throw new IllegalArgumentException(where + ": dtype must be a string, was " + kind(entry.get("dtype")));
        }
        TensorDtype dtype = TensorDtype.byName(dtypeName).orElseThrow(() -> new IllegalArgumentException(where + " "
                + TensorDtype.refusal(dtypeName)));
        int[] shape = shape(where, entry.get("shape"));
        long[] offsets = offsets(where, entry.get("data_offsets"));
        long begin = offsets[0];
        long end = offsets[1];
        if (begin > end || end > data.byteSize()) {
            throw new IllegalArgumentException(where + ": data_offsets [" + begin + ", " + end + "] are not inside the data section of "
                    + data.byteSize() + " bytes; the file is truncated or corrupt");
        }
        long expected;
        try {
            expected = Math.multiplyExact(SafetensorsTensor.elements(shape), dtype.bytes());
        }
        catch (ArithmeticException e) {
            throw new IllegalArgumentException(where + ": shape " + Arrays.toString(shape) + " has too many elements", e);
        }
        if (end - begin != expected) {
            throw new IllegalArgumentException(where + ": data_offsets [" + begin + ", " + end + "] hold " + (end - begin)
                    + " bytes, but shape " + Arrays.toString(shape) + " of " + dtype + " needs " + expected);
        }
        return new SafetensorsTensor(path.getFileName().toString(), name, dtype, shape, data.asSlice(begin, end - begin));
    }

    private static int[] shape(String where, Object value)
    {
        if (!(value instanceof List<?> dims)) {
            throw new IllegalArgumentException(where + ": shape must be an array of integers, was " + kind(value));
        }
        if (dims.size() > 16) {
            throw new IllegalArgumentException(where + ": shape has " + dims.size() + " dimensions; at most 16 are accepted");
        }
        int[] shape = new int[dims.size()];
        for (int i = 0; i < shape.length; i++) {
            if (!(dims.get(i) instanceof Long dim) || dim < 0 || dim > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(where + ": shape " + dims + " must hold integers from 0 to " + Integer.MAX_VALUE
                        + "; dimension " + i + " is " + dims.get(i));
            }
            shape[i] = (int) (long) dim;
        }
        return shape;
    }

    private static long[] offsets(String where, Object value)
    {
        if (!(value instanceof List<?> pair) || pair.size() != 2 || !(pair.get(0) instanceof Long begin) || !(pair.get(1) instanceof Long end)
                || begin < 0 || end < 0) {
            throw new IllegalArgumentException(where + ": data_offsets must be [begin, end], two non-negative integers, was " + value);
        }
        return new long[] {begin, end};
    }

    private static void refuseOverlaps(Path path, MemorySegment data, Iterable<SafetensorsTensor> tensors)
    {
        List<SafetensorsTensor> byStart = new ArrayList<>();
        tensors.forEach(byStart::add);
        Comparator<SafetensorsTensor> start = Comparator.comparingLong(t -> t.data().address() - data.address());
        byStart.sort(start);
        for (int i = 1; i < byStart.size(); i++) {
            SafetensorsTensor previous = byStart.get(i - 1);
            SafetensorsTensor next = byStart.get(i);
            long previousEnd = previous.data().address() - data.address() + previous.data().byteSize();
            long nextBegin = next.data().address() - data.address();
            if (nextBegin < previousEnd) {
                throw new IllegalArgumentException(path + ": tensors '" + previous.name() + "' and '" + next.name()
                        + "' overlap in the data section (one ends at " + previousEnd + ", the other begins at " + nextBegin
                        + "); the file is corrupt");
            }
        }
    }

    private static String kind(Object value)
    {
        return switch (value) {
            case null -> "null";
            case Map<?, ?> m -> "an object";
            case List<?> l -> "an array";
            case String s -> "a string";
            case Boolean b -> "a boolean";
            default -> "the number " + value;
        };
    }

    public Path path()
    {
        return path;
    }

    /** Tensors by name, in header order. */
    public Map<String, SafetensorsTensor> tensors()
    {
        return tensors;
    }

    public Optional<SafetensorsTensor> tensor(String name)
    {
        return Optional.ofNullable(tensors.get(name));
    }

    /** The header's {@code __metadata__} (string to string), empty when there is none. */
    public Map<String, String> metadata()
    {
        return metadata;
    }

    /** Unmaps the file; tensors' segments are invalid afterwards. */
    @Override
    public void close()
    {
        arena.close();
    }
}
