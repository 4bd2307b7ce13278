package io.handoff.tools;

import io.handoff.cli.ToolCommands;

import java.util.List;

/** The tools' commands, as {@code handoff} finds them on the module path. */
public final class Tools
        implements ToolCommands
{
    @Override
    public List<Object> commands()
    {
        return List.of(new UpCommand(), new InspectCommand(), new DemoCommand(), new ChaosCommand(), new BenchCommand(), new ClusterCommand(), new QuantizeCommand());
    }
}
