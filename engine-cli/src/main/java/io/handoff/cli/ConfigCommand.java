package io.handoff.cli;

import io.handoff.core.config.HandoffConfig;
import io.handoff.core.runtime.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

@Command(name = "config", mixinStandardHelpOptions = true,
        description = "Validate the configuration and print every effective value with where it came from.")
final class ConfigCommand
        implements Callable<Integer>
{
    @Mixin
    EngineOptions options;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call()
    {
        try (Engine engine = Engine.start(options.source())) {
            PrintWriter out = spec.commandLine().getOut();
            int width = engine.config().effectiveValues().stream().mapToInt(v -> v.path().length() + v.value().length()).max().orElse(0) + 4;
            for (HandoffConfig.EffectiveValue value : engine.config().effectiveValues()) {
                String assignment = value.path() + " = " + value.value();
                out.println(assignment + " ".repeat(Math.max(1, width - assignment.length())) + "# " + value.origin());
            }
            out.flush();
            return Main.OK;
        }
    }
}
