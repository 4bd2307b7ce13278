package io.handoff.http;

import static java.util.Objects.requireNonNull;

/**
 * What switches a running prefill, decode or colocated server to another role ({@code POST /admin/role}): {@code handoff
 * serve} stops admitting, drains what is in flight by the release rules, restarts its engine in the new role on the same
 * port, and registers again in its membership store.
 */
public interface RoleSwitcher
{
    /** The roles a server can switch to, as {@code --role} and {@code /health} name them. */
    java.util.List<String> ROLES = java.util.List.of("prefill", "decode", "colocated");

    /** Starts a switch to {@code role} (one of {@link #ROLES}) and answers at once; the switch goes on in the background. */
    Answer switchTo(String role);

    /**
     * @param status the HTTP status: 202 a switch started, 200 already in that role, 409 a switch is under way
     * @param state {@code switching}, {@code unchanged} or {@code busy}
     */
    record Answer(int status, String state, String message)
    {
        public Answer
        {
            requireNonNull(state, "state is null");
            requireNonNull(message, "message is null");
        }
    }
}
