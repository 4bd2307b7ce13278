package io.handoff.math;

import java.util.Optional;

/** Whether this JVM has the Vector API, which kernels written in Java need (an incubator module, added explicitly). */
public final class VectorApi
{
    private VectorApi() {}

    /** Why the Vector API cannot be used here, or empty when it can. */
    public static Optional<String> missing()
    {
        return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                ? Optional.empty()
                : Optional.of("the Vector API (module jdk.incubator.vector) is not in this JVM: start it with --add-modules jdk.incubator.vector");
    }
}
