package io.handoff.core.config;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** Any text as a configuration file either loads or is an {@link InvalidConfigException} listing what is wrong. */
class HandoffConfigFuzzTest
{
    private static Path file;

    @BeforeAll
    static void createFile()
            throws IOException
    {
        file = Files.createTempFile("handoff-fuzz", ".conf");
    }

    @AfterAll
    static void deleteFile()
            throws IOException
    {
        Files.deleteIfExists(file);
    }

    @FuzzTest(maxExecutions = 5_000)
    void configLoadsOrIsInvalid(byte[] text)
    {
        try {
            Files.write(file, text);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            HandoffConfig config = HandoffConfig.load(new ConfigSource(Optional.of(file), Map.of(), Map.of()), List.of());
            assertThat(config.config().hasPath("handoff")).isTrue();
        }
        catch (InvalidConfigException e) {
            assertThat(e.problems()).isNotEmpty();
        }
    }
}
