package io.handoff.cli;

import io.handoff.core.HandoffVersion;
import io.handoff.core.config.InvalidConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;

/** {@code handoff}: the command line. Exit codes: 0 ok, 1 failure, 2 usage error. */
@Command(name = "handoff",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Handoff: prefill/decode disaggregated LLM serving.",
        subcommands = {PluginsCommand.class, ConfigCommand.class, GenerateCommand.class, ServeCommand.class, RouterCommand.class, SdkCommand.class})
public final class Main
        implements Callable<Integer>
{
    public static final int OK = 0;
    public static final int FAILURE = 1;
    public static final int USAGE = 2;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args)
    {
        System.exit(run(args));
    }

    public static int run(String... args)
    {
        CommandLine commandLine = new CommandLine(new Main());
        // The tools (bench, demo, chaos, inspect, cluster status) are a module of their own; help comes last.
        for (ToolCommands tools : ServiceLoader.load(ToolCommands.class)) {
            tools.commands().forEach(commandLine::addSubcommand);
        }
        commandLine.addSubcommand(new CommandLine.HelpCommand());
        commandLine.setExecutionExceptionHandler(Main::handleFailure);
        commandLine.setParameterExceptionHandler(Main::handleUsageError);
        return commandLine.execute(args);
    }

    @Override
    public Integer call()
    {
        spec.commandLine().usage(spec.commandLine().getErr());
        return USAGE;
    }

    /** A usage error: what was wrong, a suggestion when there is one, then the command's usage. */
    private static int handleUsageError(CommandLine.ParameterException e, String[] args)
    {
        CommandLine commandLine = e.getCommandLine();
        PrintWriter err = commandLine.getErr();
        err.println(e.getMessage());
        CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
        commandLine.usage(err);
        err.flush();
        return USAGE;
    }

    private static int handleFailure(Exception e, CommandLine commandLine, CommandLine.ParseResult parseResult)
    {
        PrintWriter err = commandLine.getErr();
        if (e instanceof InvalidConfigException invalid) {
            err.println("handoff: invalid configuration:");
            invalid.problems().forEach(problem -> err.println("  " + problem));
        }
        else {
            // The engine's own refusals are written for people: their message is the whole story. Anything else is a bug, named by its type.
            boolean refusal = (e instanceof IllegalArgumentException || e instanceof IllegalStateException || e instanceof UncheckedIOException)
                    && e.getMessage() != null && !e.getMessage().isBlank();
            err.println(commandLine.getCommandSpec().qualifiedName(" ") + ": " + (refusal ? e.getMessage() : e));
            if (Boolean.getBoolean("handoff.debug")) {
                e.printStackTrace(err);
            }
        }
        err.flush();
        return FAILURE;
    }

    static final class Version
            implements CommandLine.IVersionProvider
    {
        @Override
        public String[] getVersion()
        {
            return new String[] {"handoff " + HandoffVersion.get() + " (Java " + Runtime.version() + ")"};
        }
    }
}
