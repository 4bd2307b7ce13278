package io.handoff.core.parallel;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;

import static java.util.Objects.requireNonNull;

/**
 * Ranks as processes on this host: the same Java, JVM options and module or class path as this process, running
 * {@code mainClass} with the arguments {@code arguments} gives for each rank. A rank's output goes to this process's
 * standard error, each line prefixed with {@code [rank R]}, never to its standard output (which may carry a command's
 * JSON). A rank stops when its link to the leader closes, so it does not outlive this process.
 */
public final class LocalRanks
        implements RankLauncher
{
    private final String mainModule;
    private final String mainClass;
    private final BiFunction<Integer, String, List<String>> arguments;

    /** @param mainModule the module of {@code mainClass} when this process runs on the module path */
    public LocalRanks(String mainModule, String mainClass, BiFunction<Integer, String, List<String>> arguments)
    {
        this.mainModule = requireNonNull(mainModule, "mainModule is null");
        this.mainClass = requireNonNull(mainClass, "mainClass is null");
        this.arguments = requireNonNull(arguments, "arguments is null");
    }

    @Override
    public Optional<Launched> launch(int rank, String leader)
    {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("this process's java command is unknown")));
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            // a debugger's or recorder's port and file belong to this process alone
            if (!option.startsWith("-agentlib:jdwp") && !option.startsWith("-XX:StartFlightRecording")) {
                command.add(option);
            }
        }
        boolean modular = getClass().getModule().isNamed();
        if (modular) {
            command.add("-m");
            command.add(mainModule + "/" + mainClass);
        }
        else {
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add(mainClass);
        }
        command.addAll(arguments.apply(rank, leader));
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE).start();
        }
        catch (IOException e) {
            throw new IllegalStateException("could not start tensor-parallel rank " + rank + ": " + e.getMessage(), e);
        }
        AtomicReference<String> last = new AtomicReference<>();
        PrintStream err = System.err;
        Thread.ofPlatform().daemon().name("handoff-rank-" + rank + "-output").start(() -> {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    if (!line.isBlank() && !line.contains("jdk.incubator.vector")) {
                        last.set(line);
                    }
                    err.println("[rank " + rank + "] " + line);
                }
            }
            catch (IOException ignored) {
                // the rank's output closed with it
            }
        });
        return Optional.of(new Launched(rank, process, () -> Optional.ofNullable(last.get())));
    }
}
