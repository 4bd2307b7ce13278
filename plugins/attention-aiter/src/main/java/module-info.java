/** Built-in attention backend "aiter". */
module handoff.plugin.aiter {
    requires handoff.core;

    provides io.handoff.spi.attention.AttentionBackendProvider with io.handoff.plugin.aiter.AiterProvider;
}
