package io.handoff.core.model.gguf;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;

import static java.util.Objects.requireNonNull;

/**
 * Writes a GGUF file (version 3) as a stream: the header, the metadata, every tensor's name, shape, type and offset, then
 * each tensor's bytes at the next multiple of the alignment, so a file larger than memory is written one tensor at a time.
 * The file appears under its name only once complete (written beside it, then moved).
 */
public final class GgufOutput
{
    /** A tensor to write: its name, type, GGUF dims (innermost first), and what writes its {@code bytes} bytes. */
    public record Tensor(String name, GgufTensorType type, long[] dims, long bytes, TensorBytes content)
    {
        public Tensor
        {
            requireNonNull(name, "name is null");
            requireNonNull(type, "type is null");
            dims = dims.clone();
            requireNonNull(content, "content is null");
        }
    }

    /** Writes one tensor's bytes. */
    @FunctionalInterface
    public interface TensorBytes
    {
        void write(OutputStream out)
                throws IOException;
    }

    private GgufOutput() {}

    /** Writes {@code metadata} (in its order) and {@code tensors} to {@code file}, aligned to {@code general.alignment} or 32. */
    public static void write(Path file, Map<String, GgufValue> metadata, List<Tensor> tensors)
    {
        long alignment = metadata.containsKey(GgufFile.ALIGNMENT_KEY) ? ((Number) metadata.get(GgufFile.ALIGNMENT_KEY).value()).longValue()
                : GgufFile.DEFAULT_ALIGNMENT;
        Path partial = file.resolveSibling(file.getFileName() + ".partial");
        try (Out out = new Out(new BufferedOutputStream(Files.newOutputStream(partial), 1 << 20))) {
            out.u32(GgufFile.MAGIC).u32(3).u64(tensors.size()).u64(metadata.size());
            for (Map.Entry<String, GgufValue> entry : metadata.entrySet()) {
                out.string(entry.getKey());
                out.u32(entry.getValue().type().id());
                value(out, entry.getValue());
            }
            long offset = 0;
            for (Tensor tensor : tensors) {
                out.string(tensor.name());
                out.u32(tensor.dims().length);
                for (long d : tensor.dims()) {
                    out.u64(d);
                }
                out.u32(tensor.type().id()).u64(offset);
                offset = align(offset + tensor.bytes(), alignment);
            }
            out.zeros(align(out.written, alignment) - out.written);
            long dataStart = out.written;
            offset = 0;
            for (Tensor tensor : tensors) {
                out.zeros(dataStart + offset - out.written);
                long before = out.written;
                tensor.content().write(out);
                if (out.written - before != tensor.bytes()) {
                    throw new IllegalStateException("tensor " + tensor.name() + " wrote " + (out.written - before) + " bytes, not its " + tensor.bytes());
                }
                offset = align(offset + tensor.bytes(), alignment);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
        try {
            Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot move " + partial + " to " + file + ": " + e.getMessage(), e);
        }
    }

    private static long align(long n, long alignment)
    {
        return (n + alignment - 1) / alignment * alignment;
    }

    private static void value(Out out, GgufValue value)
            throws IOException
    {
        Object v = value.value();
        switch (value.type()) {
            case UINT8, INT8, BOOL -> out.write(v instanceof Boolean b ? (b ? 1 : 0) : ((Number) v).intValue());
            case UINT16, INT16 -> out.u16(((Number) v).intValue());
            case UINT32, INT32 -> out.u32(((Number) v).intValue());
            case UINT64, INT64 -> out.u64(((Number) v).longValue());
            case FLOAT32 -> out.u32(Float.floatToRawIntBits(((Number) v).floatValue()));
            case FLOAT64 -> out.u64(Double.doubleToRawLongBits(((Number) v).doubleValue()));
            case STRING -> out.string((String) v);
            case ARRAY -> {
                GgufValue.GgufArray array = (GgufValue.GgufArray) v;
                out.u32(array.elementType().id()).u64(array.elements().size());
                for (GgufValue element : array.elements()) {
                    value(out, element);
                }
            }
        }
    }

    /** Little-endian output that counts what it wrote. */
    private static final class Out
            extends OutputStream
    {
        private final OutputStream out;
        private long written;

        Out(OutputStream out)
        {
            this.out = out;
        }

        @Override
        public void write(int b)
                throws IOException
        {
            out.write(b);
            written++;
        }

        @Override
        public void write(byte[] b, int off, int len)
                throws IOException
        {
            out.write(b, off, len);
            written += len;
        }

        Out u16(int v)
                throws IOException
        {
            write(v & 0xff);
            write((v >>> 8) & 0xff);
            return this;
        }

        Out u32(int v)
                throws IOException
        {
            u16(v);
            return u16(v >>> 16);
        }

        Out u64(long v)
                throws IOException
        {
            u32((int) v);
            return u32((int) (v >>> 32));
        }

        void string(String s)
                throws IOException
        {
            byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
            u64(bytes.length);
            write(bytes, 0, bytes.length);
        }

        void zeros(long n)
                throws IOException
        {
            for (long i = 0; i < n; i++) {
                write(0);
            }
        }

        @Override
        public void close()
                throws IOException
        {
            out.close();
        }
    }
}
