package io.handoff.demo;

import io.handoff.cli.Main;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToIntFunction;

import static java.util.Objects.requireNonNull;

/**
 * A server run as a command in a thread of this JVM ({@code --in-process}): the same entry point as
 * {@code bin/handoff} ({@code Main.run}), which blocks while the server runs. Such a command stops the
 * way it does on SIGTERM, through its own shutdown hook, when this JVM exits; it cannot be stopped
 * before, so {@link #terminate()} and {@link #kill()} leave it to that hook.
 */
public final class ThreadNode
        implements Node
{
    private final NodeSpec spec;
    private final Thread thread;
    private final AtomicReference<String> ending = new AtomicReference<>();
    private volatile int exitCode = -1;

    private ThreadNode(NodeSpec spec, ToIntFunction<String[]> command)
    {
        this.spec = spec;
        this.thread = Thread.ofPlatform().daemon().name("demo-" + spec.name()).unstarted(() -> {
            try {
                int code = command.applyAsInt(spec.arguments().toArray(String[]::new));
                exitCode = code;
                ending.set("returned exit code " + code);
            }
            catch (RuntimeException | Error e) {
                ending.set("failed: " + e);
            }
        });
    }

    /** A launcher that runs {@code command} (the CLI's {@code Main::run}) with each node's arguments in a thread of its own. */
    public static NodeLauncher launcher(ToIntFunction<String[]> command)
    {
        requireNonNull(command, "command is null");
        return spec -> {
            ThreadNode node = new ThreadNode(spec, command);
            node.thread.start();
            return node;
        };
    }

    @Override
    public NodeSpec spec()
    {
        return spec;
    }

    @Override
    public Optional<String> ended()
    {
        return thread.isAlive() ? Optional.empty() : Optional.ofNullable(ending.get()).or(() -> Optional.of("ended"));
    }

    @Override
    public boolean endedForTakenAddress()
    {
        return !thread.isAlive() && exitCode == Main.ADDRESS_IN_USE;
    }

    @Override
    public String logLocation()
    {
        return "this process's stderr (in-process)";
    }

    /** Nothing: its output is interleaved with everything else this JVM logs. */
    @Override
    public List<String> logTail(int lines)
    {
        return List.of();
    }

    @Override
    public void terminate() {}

    /** True only when the command has already returned: one that serves ends with this JVM. */
    @Override
    public boolean awaitEnd(Duration timeout)
    {
        return !thread.isAlive();
    }

    @Override
    public void kill() {}

    @Override
    public String toString()
    {
        return spec.name() + " (thread " + thread.getName() + ")";
    }
}
