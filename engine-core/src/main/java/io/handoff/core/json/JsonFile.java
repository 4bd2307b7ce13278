package io.handoff.core.json;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Reads a small JSON file that must hold one object, refusing one larger than the caller's limit before reading it. */
public final class JsonFile
{
    private JsonFile() {}

    @SuppressWarnings("unchecked")
    public static Map<String, Object> readObject(Path file, int maxBytes)
    {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            // read one byte past the limit rather than trusting the size the file system reports
            bytes = in.readNBytes(maxBytes + 1);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        if (bytes.length > maxBytes) {
            throw new IllegalArgumentException(file + ": more than " + maxBytes + " bytes; a file this large is not a "
                    + file.getFileName() + " the engine reads");
        }
        Object value = Json.parse(bytes, maxBytes, file.toString());
        if (!(value instanceof Map<?, ?> object)) {
            throw new IllegalArgumentException(file + ": expected a JSON object at the top level");
        }
        return (Map<String, Object>) object;
    }
}
