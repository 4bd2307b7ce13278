/**
 * A test kit for transfer backends, built-in or third party: fixtures (a KV pool, a sender/receiver link over a
 * real backend driven by the core's transfer link, a controllable producer fence, a recording listener, context and
 * hooks, settings read the engine's way)
 * and {@link io.handoff.testkit.transfer.TransferBackendContract}, the SPI's contract as JUnit tests; and a real etcd on
 * loopback for the cluster tests ({@link io.handoff.testkit.etcd.EtcdProcess}). Open, so
 * that JUnit may reach the contract's tests and fields when the kit is on the module path.
 */
open module handoff.testkit {
    requires transitive handoff.spi;
    requires handoff.core;
    requires java.net.http;
    requires transitive org.junit.jupiter.api;
    requires transitive org.assertj.core;

    exports io.handoff.testkit.transfer;
    exports io.handoff.testkit.etcd;

    uses io.handoff.spi.transfer.TransferBackendProvider;
}
