/**
 * The HTTP plumbing the API server (handoff.http) and the router (handoff.router) share: the exchange, API errors,
 * strict JSON field reading, routes, Prometheus text and histograms, server limits and settings, API keys and the
 * router's signatures. It knows no engine.
 */
module handoff.http.base {
    requires transitive handoff.trace;
    requires transitive jdk.httpserver;
    requires transitive com.fasterxml.jackson.databind;
    requires transitive typesafe.config;
    requires transitive java.net.http;
    requires org.apache.logging.log4j;
    requires java.management;
    requires jdk.management;

    exports io.handoff.http.base;
    exports io.handoff.http.base.security;
}
