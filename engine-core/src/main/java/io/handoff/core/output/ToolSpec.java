package io.handoff.core.output;

import static java.util.Objects.requireNonNull;

/**
 * A function the model may call, as the tool formats need it.
 *
 * @param parameters the JSON Schema of its arguments, as {@link io.handoff.core.json.Json} parses it
 * @param strict its arguments follow the schema even where the model chooses to call it
 */
public record ToolSpec(String name, Object parameters, boolean strict)
{
    public ToolSpec
    {
        requireNonNull(name, "name is null");
        requireNonNull(parameters, "parameters is null");
    }
}
