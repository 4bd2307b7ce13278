package io.handoff.core.model.hf;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * A digest that tells two copies of a checkpoint from two different checkpoints without reading the
 * weights: {@code config.json}'s bytes and the JSON header of every safetensors file (tensor names,
 * dtypes, shapes, offsets and the metadata, which for a fine-tune usually differ). Two checkpoints with
 * byte-identical headers and config but other values hash alike; that is the price of not reading
 * gigabytes at every start.
 */
public final class CheckpointIdentity
{
    private static final long MAX_HEADER_BYTES = 100L * 1024 * 1024;
    private static final long SAMPLE_BYTES = 2048;

    private CheckpointIdentity() {}

    /**
     * 16 hex digits of SHA-256 over config.json, the safetensors headers (file names included) and a sample of every
     * tensor's bytes: two checkpoints of one layout (a fine-tune saved like its base) differ only in their values.
     */
    public static String of(Path directory)
    {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
        try {
            digest.update(Files.readAllBytes(directory.resolve(HfModelConfig.FILE)));
            for (Path file : weightFiles(directory)) {
                digest.update(file.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                digest.update(header(file));
                sampleWeights(file, digest);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + directory + " to identify the checkpoint: " + e.getMessage(), e);
        }
        return HexFormat.of().formatHex(digest.digest(), 0, 8);
    }

    /** As {@link SafetensorsWeights} chooses: {@code model.safetensors} alone when present, else every shard, sorted. */
    private static List<Path> weightFiles(Path directory)
            throws IOException
    {
        Path single = directory.resolve(SafetensorsWeights.SINGLE_FILE);
        if (Files.isRegularFile(single)) {
            return List.of(single);
        }
        try (Stream<Path> files = Files.list(directory)) {
            return files.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        }
    }

    /** The first and last {@link #SAMPLE_BYTES} bytes of every tensor, in name order (a few KiB a tensor, never the weights). */
    private static void sampleWeights(Path file, MessageDigest digest)
    {
        try (SafetensorsFile weights = SafetensorsFile.open(file)) {
            for (SafetensorsTensor tensor : new java.util.TreeMap<>(weights.tensors()).values()) {
                long size = tensor.data().byteSize();
                long head = Math.min(SAMPLE_BYTES, size);
                digest.update(tensor.data().asSlice(0, head).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                if (size > head) {
                    long tail = Math.min(SAMPLE_BYTES, size - head);
                    digest.update(tensor.data().asSlice(size - tail, tail).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                }
            }
        }
    }

    private static byte[] header(Path file)
            throws IOException
    {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] length = in.readNBytes(8);
            if (length.length < 8) {
                throw new IllegalArgumentException(file + " is shorter than a safetensors header; the download is incomplete");
            }
            long size = ByteBuffer.wrap(length).order(ByteOrder.LITTLE_ENDIAN).getLong();
            if (size < 0 || size > MAX_HEADER_BYTES) {
                throw new IllegalArgumentException(file + ": header length " + size + " is not that of a safetensors file");
            }
            return in.readNBytes((int) size);
        }
    }
}
