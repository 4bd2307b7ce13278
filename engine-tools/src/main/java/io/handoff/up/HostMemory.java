package io.handoff.up;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Stream;

/** What {@code handoff up} reads of the host: its free memory and the size of a model's files. */
public final class HostMemory
{
    private HostMemory() {}

    /** {@code MemAvailable} of {@code /proc/meminfo}: what the host can give without swapping; empty where there is none. */
    public static OptionalLong available()
    {
        Path meminfo = Path.of("/proc/meminfo");
        if (!Files.isReadable(meminfo)) {
            return OptionalLong.empty();
        }
        try {
            return parseAvailable(Files.readAllLines(meminfo));
        }
        catch (IOException e) {
            return OptionalLong.empty();
        }
    }

    static OptionalLong parseAvailable(List<String> lines)
    {
        for (String line : lines) {
            // MemAvailable:   12345678 kB
            if (line.startsWith("MemAvailable:")) {
                String[] parts = line.substring("MemAvailable:".length()).strip().split("\\s+");
                try {
                    long kib = Long.parseLong(parts[0]);
                    return OptionalLong.of(kib * 1024);
                }
                catch (NumberFormatException e) {
                    return OptionalLong.empty();
                }
            }
        }
        return OptionalLong.empty();
    }

    /** Bytes of a checkpoint: a .gguf file, or a directory's .safetensors files; 0 for no path (a seeded preset). */
    public static long modelBytes(String path)
    {
        if (path == null || path.isBlank()) {
            return 0;
        }
        Path model = Path.of(path);
        try {
            if (Files.isRegularFile(model)) {
                return Files.size(model);
            }
            if (!Files.isDirectory(model)) {
                return 0;
            }
            try (Stream<Path> files = Files.list(model)) {
                long total = 0;
                for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".safetensors")).toList()) {
                    total += Files.size(file);
                }
                return total;
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the size of " + model + ": " + e.getMessage(), e);
        }
    }
}
