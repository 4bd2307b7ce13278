package io.handoff.core.config;

import java.util.List;

/** The configuration cannot be used. Each problem names the path, the value seen and what is allowed. */
public final class InvalidConfigException
        extends RuntimeException
{
    private final List<String> problems;

    public InvalidConfigException(List<String> problems)
    {
        super(problems.size() == 1 ? problems.getFirst() : "invalid configuration:\n  " + String.join("\n  ", problems));
        this.problems = List.copyOf(problems);
    }

    public List<String> problems()
    {
        return problems;
    }
}
