/**
 * The example plugin as a JPMS module, so it also works on the engine's module path (lib/). Dropped
 * into plugins/ as a PF4J JAR it is loaded through META-INF/services instead, and this file is unused.
 */
module com.example.handoff.loopback {
    requires handoff.spi;

    provides io.handoff.spi.transfer.TransferBackendProvider with com.example.handoff.loopback.LoopbackTransferProvider;
}
