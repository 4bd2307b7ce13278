/** Built-in transfer backend "mooncake": batched page writes over TCP, or same-host shared memory. */
module handoff.plugin.mooncake {
    requires handoff.spi;

    provides io.handoff.spi.transfer.TransferBackendProvider with io.handoff.plugin.mooncake.MooncakeProvider;
}
