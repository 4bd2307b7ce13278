package io.handoff.demo;

import java.io.IOException;

/** Starts one server of the demo: a process of the distribution, or threads of this JVM. */
@FunctionalInterface
public interface NodeLauncher
{
    /** Starts {@code spec} and returns without waiting for it to become healthy. */
    Node launch(NodeSpec spec)
            throws IOException;
}
