package io.handoff.dist;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the built distribution's {@code bin/handoff} in its own process, as a user would. */
final class Launcher
{
    static final String VERSION = System.getProperty("handoff.version", "0.1.0");
    static final Path DIST = Path.of(System.getProperty("handoff.dist.home", "target/handoff"));

    private Launcher() {}

    record Run(List<String> command, int exitCode, String stdout, String stderr)
    {
        String describe()
        {
            return String.join(" ", command) + " exited " + exitCode + "\n--- stdout:\n" + stdout + "\n--- stderr:\n" + stderr;
        }
    }

    /**
     * Runs {@code home/bin/handoff args} with the JDK running this test and no configuration from the
     * environment, in {@code workDir}, and waits for it (at most 3 minutes).
     */
    static Run run(Path workDir, Path home, String... args)
            throws IOException, InterruptedException
    {
        List<String> command = command(home, args);
        Path out = Files.createTempFile(workDir, "stdout", ".txt");
        Path err = Files.createTempFile(workDir, "stderr", ".txt");
        Process process = builder(workDir, command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not finish within 3 minutes");
        }
        return new Run(command, process.exitValue(), Files.readString(out), Files.readString(err));
    }

    static Run run(Path workDir, String... args)
            throws IOException, InterruptedException
    {
        return run(workDir, DIST, args);
    }

    static List<String> command(Path home, String... args)
    {
        List<String> command = new ArrayList<>();
        command.add(home.resolve("bin/handoff").toString());
        command.addAll(List.of(args));
        return command;
    }

    /** A process builder for the launcher with a clean environment; the caller decides where output goes. */
    static ProcessBuilder builder(Path workDir, List<String> command)
    {
        ProcessBuilder builder = new ProcessBuilder(command).directory(workDir.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("CONFIG_FORCE_") || name.equals("HANDOFF_JAVA_OPTS"));
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        return builder;
    }

    /** Output ids of {@code handoff generate --json} for these prompts (one batch, colocated): the reference. */
    static List<List<Integer>> colocated(Path workDir, List<String> prompts, int maxNewTokens, String... options)
            throws IOException, InterruptedException
    {
        List<String> args = new ArrayList<>(List.of("generate", "--json", "--ignore-eos", "--max-new-tokens", Integer.toString(maxNewTokens)));
        for (String prompt : prompts) {
            args.add("--prompt");
            args.add(prompt);
        }
        args.addAll(List.of(options));
        Run run = run(workDir, args.toArray(String[]::new));
        if (run.exitCode() != 0) {
            throw new AssertionError(run.describe());
        }
        List<List<Integer>> outputs = new ArrayList<>();
        ServerProcess.json(run.stdout()).forEach(result -> outputs.add(ServerProcess.outputIds(result)));
        return outputs;
    }
}
