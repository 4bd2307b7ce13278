package io.handoff.demo;

import java.net.URI;
import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * One server the demo starts: its place in the system, the loopback port it listens on, and the
 * {@code handoff} arguments that start it (the subcommand first, e.g. {@code serve --role prefill ...}).
 */
public record NodeSpec(String name, Role role, int port, List<String> arguments)
{
    public enum Role
    {
        PREFILL, DECODE, ROUTER
    }

    public NodeSpec
    {
        requireNonNull(name, "name is null");
        requireNonNull(role, "role is null");
        arguments = List.copyOf(requireNonNull(arguments, "arguments is null"));
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be in 1..65535, got " + port);
        }
        if (arguments.isEmpty()) {
            throw new IllegalArgumentException("arguments are empty: the first one is the handoff subcommand");
        }
    }

    public URI url()
    {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** The subcommand ({@code serve}, {@code router}). */
    public String command()
    {
        return arguments.getFirst();
    }
}
