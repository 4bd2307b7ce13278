package io.handoff.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * llama.cpp's prefill and decode tokens/s on the same GGUF file, measured by {@code llamacpp-bench.mjs} (a resource of
 * this package) through node-llama-cpp's prebuilt CPU binary, so that {@code bench compute} can print the two engines side
 * by side. Node runs in a child process after the engine has closed, so the two never share the cores.
 *
 * @param modules a {@code node_modules} folder holding node-llama-cpp, or the folder above it
 * @param decodeContext the prompt length before the decode run
 */
record LlamaCppBench(Path modules, Path model, int threads, int promptLength, int decodeContext, int decodeTokens, String kvType, int repeats)
{
    private static final String SCRIPT = "llamacpp-bench.mjs";
    private static final long TIMEOUT_MINUTES = 30;

    LlamaCppBench
    {
        requireNonNull(modules, "modules is null");
        requireNonNull(model, "model is null");
        requireNonNull(kvType, "kvType is null");
    }

    /** What llama.cpp measured, tokens per second (each the median of the repeats). */
    record Result(double prefillTokensPerSecond, double decodeTokensPerSecond) {}

    Result run()
    {
        if (!Files.isDirectory(modules)) {
            throw new IllegalArgumentException("--llama-cpp " + modules + " is not a directory; give a node_modules folder holding "
                    + "node-llama-cpp 3.x (make bench-llamacpp installs one into testkit-node/llamacpp)");
        }
        Path script = extractScript();
        try {
            List<String> command = List.of("node", script.toString(), modules.toAbsolutePath().toString(), model.toAbsolutePath().toString(),
                    Integer.toString(threads), Integer.toString(promptLength), Integer.toString(decodeTokens), kvType.toUpperCase(Locale.ROOT),
                    Integer.toString(repeats), Integer.toString(decodeContext));
            Process process;
            try {
                process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            }
            catch (IOException e) {
                throw new IllegalStateException("cannot start node for the llama.cpp comparison (" + e.getMessage()
                        + "); install Node.js 18 or newer and put node on the PATH", e);
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!process.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw new IllegalStateException("the llama.cpp benchmark did not finish in " + TIMEOUT_MINUTES + " minutes");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("the llama.cpp benchmark (node " + SCRIPT + ") failed with exit code " + process.exitValue()
                        + "; its error is printed above");
            }
            JsonNode result = new ObjectMapper().readTree(output.substring(output.lastIndexOf('\n') + 1));
            return new Result(result.path("prefill_tokens_per_s").asDouble(), result.path("decode_tokens_per_s").asDouble());
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the llama.cpp benchmark's result: " + e.getMessage(), e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the llama.cpp benchmark ran", e);
        }
        finally {
            try {
                Files.deleteIfExists(script);
            }
            catch (IOException ignored) {
                // a leftover temporary file is harmless
            }
        }
    }

    private static Path extractScript()
    {
        try (InputStream in = LlamaCppBench.class.getResourceAsStream(SCRIPT)) {
            if (in == null) {
                throw new IllegalStateException(SCRIPT + " is missing from the handoff-cli jar; the distribution is incomplete");
            }
            Path script = Files.createTempFile("handoff-llamacpp-bench", ".mjs");
            Files.write(script, in.readAllBytes());
            return script;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot write " + SCRIPT + " to a temporary file: " + e.getMessage(), e);
        }
    }
}
