/**
 * The router in front of prefill and decode servers: pairing per request, retries, circuit breakers, cache-aware
 * routing, membership. It speaks HTTP to the servers through the shared HTTP base and never requires the engine core.
 */
module handoff.router {
    requires handoff.http.base;
    requires handoff.trace;
    requires handoff.cluster;
    requires java.net.http;
    requires org.apache.logging.log4j;

    exports io.handoff.router to handoff.cli, handoff.tools;
}
