/**
 * What the engine and the router both say about a request: its timeline of events ({@link io.handoff.trace.Timelines}),
 * the cause when it fails ({@link io.handoff.trace.FailureCause}), and text from a peer made safe to log
 * ({@link io.handoff.trace.PeerText}). Depends on nothing but {@code java.base}.
 */
module handoff.trace {
    exports io.handoff.trace;
}
