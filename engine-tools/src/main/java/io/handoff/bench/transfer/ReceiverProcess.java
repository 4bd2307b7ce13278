package io.handoff.bench.transfer;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static java.util.Objects.requireNonNull;

/**
 * The bench's receiver: a child process of the same distribution ({@code bench transfer-receiver}) that opens the
 * backend as a decode does. Its stdout carries {@link ReceiverProtocol}'s lines, its stderr goes to a file in a
 * private temporary folder whose tail explains a failure. Destroyed by {@link #close} and, should this process
 * exit without it, by a shutdown hook.
 */
final class ReceiverProcess
        implements AutoCloseable
{
    private static final String END = "\0end";

    private final Process process;
    private final Path folder;
    private final Path log;
    private final Writer stdin;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Thread destroyAtExit;

    private ReceiverProcess(Process process, Path folder, Path log)
    {
        this.process = process;
        this.folder = folder;
        this.log = log;
        this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.destroyAtExit = new Thread(process::destroyForcibly, "handoff-bench-receiver-cleanup");
        Runtime.getRuntime().addShutdownHook(destroyAtExit);
        Thread.ofPlatform().daemon().name("handoff-bench-receiver-stdout").start(this::readLines);
    }

    static ReceiverProcess start(List<String> command)
    {
        requireNonNull(command, "command is null");
        Path folder;
        try {
            folder = Files.createTempDirectory("handoff-bench-transfer");
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary folder for the receiver's log: " + e.getMessage(), e);
        }
        Path log = folder.resolve("receiver.log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(log.toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        try {
            return new ReceiverProcess(builder.start(), folder, log);
        }
        catch (IOException e) {
            deleteQuietly(log, folder);
            throw new IllegalStateException("cannot start the receiver process (" + String.join(" ", command) + "): " + e.getMessage(), e);
        }
    }

    /** Waits for the receiver's descriptor. */
    byte[] descriptor(Duration timeout)
            throws InterruptedException
    {
        return Base64.getDecoder().decode(await(ReceiverProtocol.DESCRIPTOR, timeout, "to expose its pool"));
    }

    /** Asks the receiver for its pool's checksums. */
    String checksums(Duration timeout)
            throws InterruptedException
    {
        try {
            stdin.write(ReceiverProtocol.ASK_CHECKSUMS + "\n");
            stdin.flush();
        }
        catch (IOException e) {
            throw failed("took no more requests (" + e.getMessage() + ")");
        }
        return await(ReceiverProtocol.CHECKSUMS, timeout, "to hash its pool");
    }

    private String await(String prefix, Duration timeout, String what)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null) {
                throw failed("did not answer within " + timeout + " " + what);
            }
            if (line.equals(END)) {
                process.waitFor(5, TimeUnit.SECONDS);
                throw failed(process.isAlive() ? "closed its output" : "exited with code " + process.exitValue());
            }
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length());
            }
        }
    }

    private IllegalStateException failed(String what)
    {
        List<String> tail = logTail(20);
        return new IllegalStateException("the receiver process " + what + (tail.isEmpty() ? "" : "; the end of its log:\n  "
                + String.join("\n  ", tail)));
    }

    boolean isAlive()
    {
        return process.isAlive();
    }

    List<String> logTail(int count)
    {
        try {
            List<String> all = Files.exists(log) ? Files.readAllLines(log) : List.of();
            return new ArrayList<>(all.subList(Math.max(0, all.size() - count), all.size()));
        }
        catch (IOException | UncheckedIOException e) {
            return List.of("(cannot read " + log + ": " + e.getMessage() + ")");
        }
    }

    private void readLines()
    {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                lines.add(line);
            }
        }
        catch (IOException e) {
            // the process is gone: END says so
        }
        lines.add(END);
    }

    /** Closes the receiver's stdin (it exits on its own), then destroys it if it has not exited shortly after. */
    @Override
    public void close()
    {
        try {
            stdin.close();
        }
        catch (IOException e) {
            // it is gone already
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        finally {
            try {
                Runtime.getRuntime().removeShutdownHook(destroyAtExit);
            }
            catch (IllegalStateException e) {
                // shutting down: the hook runs anyway
            }
            deleteQuietly(log, folder);
        }
    }

    private static void deleteQuietly(Path... paths)
    {
        for (Path path : paths) {
            try {
                Files.deleteIfExists(path);
            }
            catch (IOException e) {
                // a temporary file: nothing depends on it
            }
        }
    }
}
