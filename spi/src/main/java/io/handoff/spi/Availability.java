package io.handoff.spi;

import static java.util.Objects.requireNonNull;

/**
 * Whether a provider can run on this machine, and if not, why, in words an operator can act on
 * ("libucp.so.0 not found: install libucx0"). A provider never claims availability it has not
 * checked.
 */
public record Availability(boolean available, String reason)
{
    public static final Availability AVAILABLE = new Availability(true, null);

    public Availability
    {
        if (!available) {
            requireNonNull(reason, "reason is null");
            if (reason.isBlank()) {
                throw new IllegalArgumentException("an unavailable provider must say why");
            }
        }
    }

    public static Availability unavailable(String reason)
    {
        return new Availability(false, reason);
    }
}
