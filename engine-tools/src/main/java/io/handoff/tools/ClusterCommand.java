package io.handoff.tools;

import io.handoff.cli.CommandGroup;
import picocli.CommandLine.Command;

/** {@code handoff cluster}: commands about a deployment's members. */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = "Look at a deployment of prefill and decode servers as its membership lists them.",
        subcommands = {ClusterStatusCommand.class})
final class ClusterCommand
        extends CommandGroup
{
}
