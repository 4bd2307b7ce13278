package io.handoff.demo;

import io.handoff.cli.Main;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/** A server in its own process; stdout and stderr go to one log file. */
public final class ProcessNode
        implements Node
{
    private static final long TAIL_BYTES = 64 << 10;

    private final NodeSpec spec;
    private final Process process;
    private final Path log;
    private final List<ProcessHandle> descendants = new ArrayList<>();

    private ProcessNode(NodeSpec spec, Process process, Path log)
    {
        this.spec = spec;
        this.process = process;
        this.log = log;
    }

    /**
     * Starts {@code command} with {@code environment} added to this process's, writing its output to
     * {@code log}. Its stdin is closed: a server never reads it.
     */
    public static ProcessNode start(NodeSpec spec, List<String> command, Map<String, String> environment, Path log)
            throws IOException
    {
        requireNonNull(spec, "spec is null");
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        builder.environment().putAll(environment);
        Files.writeString(log, "");
        try {
            return new ProcessNode(spec, builder.start(), log);
        }
        catch (IOException e) {
            throw new IOException("cannot start " + spec.name() + " (" + String.join(" ", command) + "): " + e.getMessage(), e);
        }
    }

    /** A launcher that runs {@code prefix + spec.arguments()} (e.g. {@code [<home>/bin/handoff]}), logging to {@code logDir/<name>.log}. */
    public static NodeLauncher launcher(List<String> prefix, Map<String, String> environment, Path logDir)
    {
        List<String> fixed = List.copyOf(prefix);
        Map<String, String> env = Map.copyOf(environment);
        return spec -> {
            List<String> command = new ArrayList<>(fixed);
            command.addAll(spec.arguments());
            return start(spec, command, env, logDir.resolve(spec.name() + ".log"));
        };
    }

    @Override
    public NodeSpec spec()
    {
        return spec;
    }

    public long pid()
    {
        return process.pid();
    }

    @Override
    public Optional<String> ended()
    {
        if (process.isAlive()) {
            return Optional.empty();
        }
        int code = process.exitValue();
        // 128 + n: killed by signal n (the shell's convention; Java reports it the same way)
        return Optional.of(code > 128 && code < 160 ? "exited with code " + code + " (signal " + (code - 128) + ")" : "exited with code " + code);
    }

    @Override
    public boolean endedForTakenAddress()
    {
        return !process.isAlive() && process.exitValue() == Main.ADDRESS_IN_USE;
    }

    @Override
    public String logLocation()
    {
        return log.toString();
    }

    @Override
    public List<String> logTail(int lines)
    {
        try {
            // Only the end of a long log is read: the last lines are what says why a server stopped.
            ByteBuffer buffer;
            try (SeekableByteChannel channel = Files.newByteChannel(log)) {
                long size = channel.size();
                channel.position(Math.max(0, size - TAIL_BYTES));
                buffer = ByteBuffer.allocate((int) Math.min(size, TAIL_BYTES));
                while (buffer.hasRemaining() && channel.read(buffer) >= 0) {
                    // until full, or at the end of a file that shrank
                }
            }
            byte[] bytes = Arrays.copyOf(buffer.array(), buffer.position());
            List<String> all = new String(bytes, StandardCharsets.UTF_8).lines().toList();
            return all.subList(Math.max(0, all.size() - lines), all.size());
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + log + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void terminate()
    {
        if (process.isAlive()) {
            // Taken before the signal: once the process is gone its children are reparented and out of reach.
            process.descendants().forEach(descendants::add);
            process.destroy();
        }
    }

    @Override
    public boolean awaitEnd(Duration timeout)
            throws InterruptedException
    {
        return process.waitFor(Math.max(0, timeout.toMillis()), TimeUnit.MILLISECONDS);
    }

    @Override
    public void kill()
    {
        process.descendants().forEach(descendants::add);
        process.destroyForcibly();
        descendants.forEach(ProcessHandle::destroyForcibly);
    }

    @Override
    public String toString()
    {
        return spec.name() + " (pid " + process.pid() + ")";
    }
}
