/** The {@code handoff} command line: serve, router, inspect, generate, plugins, config, demo, chaos, bench, sdk and cluster. */
module handoff.cli {
    requires handoff.core;
    requires handoff.http;
    requires handoff.http.base;
    requires handoff.router;
    requires handoff.cluster;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires java.net.http;
    requires java.xml;
    requires java.compiler;
    requires org.apache.logging.log4j;
    requires jdk.incubator.vector;

    opens io.handoff.cli to info.picocli;
    opens io.handoff.bench.serving to info.picocli;
    opens io.handoff.bench.transfer to info.picocli;
    opens io.handoff.bench.attention to info.picocli;
    opens io.handoff.bench.scheduler to info.picocli;
}
