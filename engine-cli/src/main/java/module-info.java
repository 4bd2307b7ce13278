/**
 * The {@code handoff} command line: serve, router, generate, plugins, config and sdk. The tools (bench, demo, chaos,
 * inspect, cluster status) come from the module that provides {@link io.handoff.cli.ToolCommands}, and share this
 * module's option mixins.
 */
module handoff.cli {
    requires transitive handoff.core;
    requires handoff.http;
    requires handoff.http.base;
    requires handoff.router;
    requires handoff.cluster;
    requires transitive info.picocli;
    requires com.fasterxml.jackson.databind;
    requires java.xml;
    requires java.compiler;
    requires org.apache.logging.log4j;

    exports io.handoff.cli to handoff.tools;
    opens io.handoff.cli to info.picocli;

    uses io.handoff.cli.ToolCommands;
}
