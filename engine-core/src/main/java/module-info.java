/**
 * Handoff's engine: the plugin runtime, configuration, KV pool and allocator, prefix cache, model, scheduler,
 * disaggregation protocol and fault injection. No HTTP server, JSON or CLI library: the front ends
 * ({@code handoff.http}, {@code handoff.cli}) are modules of their own, and only they see these packages.
 */
module handoff.core {
    requires java.management;
    requires transitive handoff.spi;
    requires transitive handoff.trace;
    requires transitive typesafe.config;
    requires org.pf4j;
    requires org.apache.logging.log4j;
    requires org.apache.logging.log4j.core;
    requires handoff.math;
    requires jdk.incubator.vector;

    exports io.handoff.core to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.config to handoff.http, handoff.cli, handoff.tools, handoff.testkit;
    exports io.handoff.core.runtime to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.plugin to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.kv to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.prefix to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.model to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.model.tokenizer to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.model.hf to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.model.gguf to handoff.tools;
    exports io.handoff.core.model.parallel to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.parallel to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.scheduler to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.disagg to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.disagg.control to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.disagg.room to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.disagg.peer to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.fault to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.output to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.grammar to handoff.http, handoff.cli, handoff.tools;
    exports io.handoff.core.json to handoff.http, handoff.tools;
    exports io.handoff.core.security to handoff.http, handoff.cli, handoff.tools, handoff.testkit;
    exports io.handoff.core.transfer to handoff.testkit, handoff.cli, handoff.tools;

    uses io.handoff.spi.transfer.TransferBackendProvider;
    uses io.handoff.spi.attention.AttentionBackendProvider;
}
