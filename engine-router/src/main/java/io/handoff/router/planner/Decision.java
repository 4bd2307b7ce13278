package io.handoff.router.planner;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * One look's outcome: hold, or switch one server's role, with why.
 *
 * @param nanos when it was decided
 * @param server the server to switch, with the role it goes to ({@code prefill} or {@code decode}); empty to hold
 */
public record Decision(long nanos, Optional<Switch> server, String reason)
{
    public Decision
    {
        requireNonNull(server, "server is null");
        requireNonNull(reason, "reason is null");
    }

    /** Switch server {@code id} to {@code role}. */
    public record Switch(String id, String role)
    {
        public Switch
        {
            requireNonNull(id, "id is null");
            requireNonNull(role, "role is null");
        }
    }

    static Decision hold(long nanos, String reason)
    {
        return new Decision(nanos, Optional.empty(), reason);
    }
}
