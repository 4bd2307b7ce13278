/** Built-in transfer backend "mori": direct one-sided writes from the KV pool, with a forward sync. */
module handoff.plugin.mori {
    requires handoff.spi;

    provides io.handoff.spi.transfer.TransferBackendProvider with io.handoff.plugin.mori.MoriProvider;
}
