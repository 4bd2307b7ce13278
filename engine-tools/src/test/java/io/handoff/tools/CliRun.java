package io.handoff.tools;

import io.handoff.cli.Main;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** One {@code handoff} command run in this JVM (the tools among its commands), with what it printed on stdout and stderr. */
record CliRun(int exitCode, String stdout, String stderr)
{
    static CliRun of(String... args)
    {
        PrintStream originalOut = System.out;
        PrintStream originalErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            return new CliRun(Main.run(args), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        }
        finally {
            System.setOut(originalOut);
            System.setErr(originalErr);
        }
    }
}
