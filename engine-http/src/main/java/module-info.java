/** The HTTP API server (SGLang and OpenAI shapes, metrics, bootstrap) and the PD router, over the engine core. */
module handoff.http {
    requires handoff.core;
    requires handoff.http.base;
    requires handoff.cluster;
    requires com.fasterxml.jackson.databind;
    requires jdk.httpserver;
    requires java.net.http;
    requires org.apache.logging.log4j;

    exports io.handoff.http to handoff.cli, handoff.tools;
}
