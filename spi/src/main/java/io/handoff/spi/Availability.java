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

    /** Whether this JVM has the Vector API, which kernels written in Java need (it is an incubator module, added explicitly). */
    public static Availability ofVectorApi()
    {
        return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                ? AVAILABLE
                : unavailable("the Vector API (module jdk.incubator.vector) is not in this JVM: start it with --add-modules jdk.incubator.vector");
    }
}
