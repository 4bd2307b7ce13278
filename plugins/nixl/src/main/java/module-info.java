/** Built-in transfer backend "nixl": UCX (libucp through Java's FFM API), sending from a staging buffer. */
module handoff.plugin.nixl {
    requires handoff.spi;

    provides io.handoff.spi.transfer.TransferBackendProvider with io.handoff.plugin.nixl.NixlProvider;
}
