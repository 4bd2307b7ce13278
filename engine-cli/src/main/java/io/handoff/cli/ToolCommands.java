package io.handoff.cli;

import java.util.List;

/**
 * Commands that another module adds to {@code handoff} (the tools: bench, demo, chaos, inspect, cluster status), found
 * with {@link java.util.ServiceLoader} on the module path. Each command is a picocli {@code @Command} object whose
 * package is open to picocli; the shared options are {@link EngineOptions} and {@link ModelPathOption}, as mixins.
 */
public interface ToolCommands
{
    /** The commands, in the order {@code handoff --help} lists them. */
    List<Object> commands();
}
