package io.handoff.core.output;

/** What a {@link Generation} reports as it runs, for a server's metrics; {@link #NONE} for a front end that keeps none. */
public interface GenerationMetrics
{
    GenerationMetrics NONE = new GenerationMetrics() {};

    /** The gap between two output tokens as the generation received them. */
    default void interToken(long nanos) {}

    /** The client went away before the end; the request is being aborted for it. */
    default void clientDisconnected() {}

    /** The generation ended (its pages are back). */
    default void finished(Generation.Outcome outcome) {}
}
