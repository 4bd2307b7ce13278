/**
 * The tools: {@code bench} (compute, transfer, serving, attention, scheduler), {@code demo}, {@code chaos},
 * {@code inspect} and {@code cluster status}. They add themselves to the {@code handoff} command line through
 * {@link io.handoff.cli.ToolCommands}, and share its option mixins and its one streaming client.
 */
module handoff.tools {
    requires handoff.cli;
    requires handoff.core;
    requires handoff.http.base;
    requires handoff.router;
    requires handoff.cluster;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires java.net.http;
    requires jdk.incubator.vector;

    opens io.handoff.tools to info.picocli;
    opens io.handoff.bench.serving to info.picocli;
    opens io.handoff.bench.transfer to info.picocli;
    opens io.handoff.bench.attention to info.picocli;
    opens io.handoff.bench.scheduler to info.picocli;
    opens io.handoff.bench.collective to info.picocli;
    opens io.handoff.bench.grammar to info.picocli;

    provides io.handoff.cli.ToolCommands with io.handoff.tools.Tools;
}
