package io.handoff.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;

/** A command that only groups subcommands ({@code bench}, {@code sdk}): run alone, it prints its usage and exits 2. */
public abstract class CommandGroup
        implements Callable<Integer>
{
    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
    {
        spec.commandLine().usage(spec.commandLine().getErr());
        return Main.USAGE;
    }
}
