package io.handoff.core.model.gguf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One GGUF file (version 3, or 2, which has the same layout), memory-mapped read-only into its own
 * shared {@link Arena}: the magic {@code GGUF}, a u32 version, u64 tensor and key/value counts, the
 * key/values, the tensor infos, then, at the next multiple of {@code general.alignment} (default 32),
 * the data section every tensor offset is relative to. Everything is checked against the file before
 * a tensor is exposed, so {@link GgufTensor#data()} never reaches outside it; nothing is copied until
 * a tensor is converted. Like a safetensors checkpoint, a file truncated by another process while
 * mapped faults on access, which no check at open time can prevent.
 */
public final class GgufFile
        implements AutoCloseable
{
    public static final int MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
    public static final int DEFAULT_ALIGNMENT = 32;
    public static final String ALIGNMENT_KEY = "general.alignment";
    public static final int MAX_DIMS = 4;
    /** Longer tensor names are refused: ggml's limit is 64 bytes, this leaves room for converters that exceed it. */
    public static final int MAX_TENSOR_NAME_BYTES = 1024;
    // name length, n_dims, one dim, type, offset: the fewest bytes a tensor info takes
    private static final int MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8;
    // key length, value type, one byte of value
    private static final int MIN_KV_BYTES = 8 + 4 + 1;

    private final Path path;
    private final Arena arena;
    private final int version;
    private final GgufMetadata metadata;
    private final Map<String, GgufTensor> tensors;

    private GgufFile(Path path, Arena arena, int version, GgufMetadata metadata, Map<String, GgufTensor> tensors)
    {
        this.path = path;
        this.arena = arena;
        this.version = version;
        this.metadata = metadata;
        this.tensors = tensors;
    }

    /** Maps and validates {@code path}; throws {@link IllegalArgumentException} starting with the path when it is malformed. */
    public static GgufFile open(Path path)
    {
        requireNonNull(path, "path is null");
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            MemorySegment file = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            return parse(path, arena, file);
        }
        catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot read GGUF file " + path + ": " + e.getMessage(), e);
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Parses bytes already in memory, {@code path} naming them in errors; {@code arena} (may be null) is closed by {@link #close()}. */
    static GgufFile parse(Path path, Arena arena, MemorySegment file)
    {
        GgufCursor cursor = new GgufCursor(path, file);
        int magic = cursor.i32("the magic");
        if (magic != MAGIC) {
            throw cursor.fail(String.format("starts with bytes %08x, not the GGUF magic \"GGUF\"; this is not a GGUF file",
                    Integer.reverseBytes(magic)));
        }
        long version = cursor.u32("the version");
        if (version != 2 && version != 3) {
            throw cursor.fail("is GGUF version " + version + "; versions 2 and 3 are read"
                    + (version == 1 ? " (version 1 is from 2023: convert the model again with a current llama.cpp)" : ""));
        }
        long tensorCount = cursor.count("the tensor count", (cursor.remaining() - 8) / MIN_TENSOR_INFO_BYTES,
                "the tensor infos the file can hold");
        long kvCount = cursor.count("the metadata count", (cursor.remaining() - 8) / MIN_KV_BYTES, "the key/values the file can hold");
        GgufMetadata metadata = new GgufMetadata(path, GgufMetadataReader.read(cursor, kvCount));
        long alignment = alignment(path, metadata);
        Map<String, TensorInfo> infos = new LinkedHashMap<>();
        for (long i = 0; i < tensorCount; i++) {
            TensorInfo info = tensorInfo(cursor, i);
            if (infos.put(info.name(), info) != null) {
                throw cursor.fail("tensor '" + info.name() + "' appears twice; the file is corrupt");
            }
        }
        cursor.align(alignment, "the padding before the data section");
        MemorySegment data = file.asSlice(cursor.position());
        Map<String, GgufTensor> tensors = new LinkedHashMap<>();
        for (TensorInfo info : infos.values()) {
            tensors.put(info.name(), info.slice(path, data, alignment));
        }
        return new GgufFile(path, arena, (int) version, metadata, Collections.unmodifiableMap(tensors));
    }

    private static long alignment(Path path, GgufMetadata metadata)
    {
        long alignment = metadata.optionalInteger(ALIGNMENT_KEY).orElse((long) DEFAULT_ALIGNMENT);
        if (alignment < 1 || alignment > 1 << 20 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException(path + ": metadata key '" + ALIGNMENT_KEY + "' is " + alignment
                    + "; it must be a power of two from 1 to 1048576 (the file is corrupt)");
        }
        return alignment;
    }

    private record TensorInfo(String name, long[] dims, long typeId, long offset)
    {
        GgufTensor slice(Path path, MemorySegment data, long alignment)
        {
            String where = path + ": tensor '" + name + "'";
            GgufTensorType type = GgufTensorType.byId(typeId).orElseThrow(() -> new IllegalArgumentException(where + " has ggml type "
                    + typeId + " (" + GgufTensorType.ggmlName(typeId) + "), which the engine does not read; supported: "
                    + GgufTensorType.supported() + ". Convert or requantize the model to one of those (e.g. Q8_0 or F16)"));
            if (dims[0] % type.blockElements() != 0) {
                throw new IllegalArgumentException(where + " has ne[0] = " + dims[0] + ", not a multiple of " + type + "'s block of "
                        + type.blockElements() + "; the file is corrupt");
            }
            long bytes;
            try {
                long elements = Arrays.stream(dims).reduce(1, Math::multiplyExact);
                bytes = Math.multiplyExact(elements / type.blockElements(), type.blockBytes());
            }
            catch (ArithmeticException e) {
                throw new IllegalArgumentException(where + ": dims " + Arrays.toString(dims) + " have too many elements; the file is corrupt", e);
            }
            if (offset % alignment != 0 || offset > data.byteSize() || bytes > data.byteSize() - offset) {
                throw new IllegalArgumentException(where + ": " + bytes + " bytes of " + type + " at data offset " + offset
                        + " are not inside the data section of " + data.byteSize() + " bytes (or the offset is not a multiple of the alignment "
                        + alignment + "); the file is truncated or corrupt");
            }
            return new GgufTensor(path, name, type, dims, offset, data.asSlice(offset, bytes));
        }
    }

    private static TensorInfo tensorInfo(GgufCursor cursor, long index)
    {
        String name = cursor.string("tensor info " + index + " name");
        if (name.length() > MAX_TENSOR_NAME_BYTES) {
            throw cursor.fail("tensor info " + index + " has a name of " + name.length() + " characters; at most "
                    + MAX_TENSOR_NAME_BYTES + " are accepted (the file is corrupt)");
        }
        String what = "tensor '" + name + "'";
        long nDims = cursor.u32(what + " n_dims");
        if (nDims < 1 || nDims > MAX_DIMS) {
            throw cursor.fail(what + " has " + nDims + " dimensions; GGUF tensors have 1 to " + MAX_DIMS);
        }
        long[] dims = new long[(int) nDims];
        for (int d = 0; d < dims.length; d++) {
            long dim = cursor.u64(what + " ne[" + d + "]");
            if (dim < 1 || dim > Integer.MAX_VALUE) {
                throw cursor.fail(what + " has ne[" + d + "] = " + Long.toUnsignedString(dim) + "; dimensions are 1 to "
                        + Integer.MAX_VALUE + " (the file is corrupt)");
            }
            dims[d] = dim;
        }
        long type = cursor.u32(what + " type");
        long offset = cursor.u64(what + " offset");
        if (offset < 0) {
            throw cursor.fail(what + " has offset " + Long.toUnsignedString(offset) + "; the file is corrupt");
        }
        return new TensorInfo(name, dims, type, offset);
    }

    public Path path()
    {
        return path;
    }

    public int version()
    {
        return version;
    }

    public GgufMetadata metadata()
    {
        return metadata;
    }

    /** Every tensor by its GGUF name, in file order. */
    public Map<String, GgufTensor> tensors()
    {
        return tensors;
    }

    public Optional<GgufTensor> tensor(String name)
    {
        return Optional.ofNullable(tensors.get(name));
    }

    /** Unmaps the file; a tensor's data must not be read afterwards (it fails with {@link IllegalStateException}). */
    @Override
    public void close()
    {
        if (arena != null) {
            arena.close();
        }
    }
}
