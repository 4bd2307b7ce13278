/** The HTTP API server (SGLang and OpenAI shapes, metrics, bootstrap) over the engine core; the router is handoff.router. */
module handoff.http {
    requires handoff.core;
    requires handoff.http.base;
    requires com.fasterxml.jackson.databind;
    requires jdk.httpserver;
    requires org.apache.logging.log4j;

    exports io.handoff.http to handoff.cli, handoff.tools;
}
