package io.handoff.cli;

import io.handoff.core.runtime.ModelSource;
import picocli.CommandLine.Option;

import java.util.Map;
import java.util.Optional;

/** {@code --model NAME}: a built-in model preset, for every command that runs a model (a mixin). */
public final class ModelOption
{
    @Option(names = "--model", paramLabel = "NAME", description = "Built-in model preset (tiny-mla, tiny-gqa); sets " + ModelSource.NAME_KEY + ".")
    String name;

    public Optional<String> name()
    {
        return Optional.ofNullable(name);
    }

    /** Puts the preset's name, when one was given, into {@code overrides}. */
    public void applyTo(Map<String, String> overrides)
    {
        if (name != null) {
            overrides.put(ModelSource.NAME_KEY, name);
        }
    }
}
