/**
 * Handoff's core: the SPI that plugins implement (exported), and the engine that discovers and drives
 * them (not exported).
 */
module handoff.core {
    requires org.pf4j;
    requires org.slf4j;
    requires typesafe.config;
    requires org.apache.logging.log4j;
    requires org.apache.logging.log4j.core;
    requires com.fasterxml.jackson.databind;
    requires info.picocli;
    requires jdk.incubator.vector;
    requires jdk.httpserver;
    requires java.net.http;

    exports io.handoff.spi;
    exports io.handoff.spi.transfer;
    exports io.handoff.spi.attention;

    opens io.handoff.core.cli to info.picocli;
    opens io.handoff.core to info.picocli;

    uses io.handoff.spi.transfer.TransferBackendProvider;
    uses io.handoff.spi.attention.AttentionBackendProvider;
}
