package io.handoff.cli;

import io.handoff.core.HandoffVersion;
import io.handoff.core.config.InvalidConfigException;
import io.handoff.core.config.Typos;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;

/** {@code handoff}: the command line. Exit codes: 0 ok, 1 failure, 2 usage error, 3 the address to listen on is taken. */
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
    /** A server cannot listen: another process holds its address (port), which a start on another port may avoid. */
    public static final int ADDRESS_IN_USE = 3;

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
        HelpLayout.apply(commandLine);
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

    /**
     * A usage error: what was wrong (with the nearest option when one was mistyped) on one line, and where the whole
     * usage is, on the next; never the full help, which would bury the one line that matters.
     */
    private static int handleUsageError(CommandLine.ParameterException e, String[] args)
    {
        CommandLine commandLine = e.getCommandLine();
        PrintWriter err = commandLine.getErr();
        String command = commandLine.getCommandSpec().qualifiedName(" ");
        StringBuilder line = new StringBuilder(command).append(": ").append(oneLine(e.getMessage()));
        if (e instanceof CommandLine.UnmatchedArgumentException unmatched) {
            nearestOption(commandLine.getCommandSpec(), unmatched.getUnmatched())
                    .ifPresent(option -> line.append(" (did you mean ").append(option).append("?)"));
        }
        err.println(line);
        err.println("see '" + command + " --help'");
        err.flush();
        return USAGE;
    }

    /** The visible option (or subcommand) nearest to the first unknown one, when it is close enough to be a typo of it. */
    static java.util.Optional<String> nearestOption(CommandLine.Model.CommandSpec command, java.util.List<String> unmatched)
    {
        if (unmatched.isEmpty()) {
            return java.util.Optional.empty();
        }
        String first = unmatched.getFirst();
        // an option is compared with the options, a word with the subcommands
        String typed = first.contains("=") ? first.substring(0, first.indexOf('=')) : first;
        java.util.List<String> candidates = new java.util.ArrayList<>();
        if (typed.startsWith("-")) {
            command.options().stream().filter(option -> !option.hidden()).forEach(option -> candidates.addAll(java.util.List.of(option.names())));
        }
        else {
            command.subcommands().forEach((name, sub) -> {
                if (!sub.getCommandSpec().usageMessage().hidden()) {
                    candidates.add(name);
                }
            });
        }
        return Typos.closest(typed, candidates);
    }

    private static String oneLine(String message)
    {
        String text = message == null ? "invalid arguments" : message.strip();
        return text.replaceAll("\\s*\\R\\s*", "; ");
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
        return e instanceof UncheckedIOException && e.getCause() instanceof BindException ? ADDRESS_IN_USE : FAILURE;
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
