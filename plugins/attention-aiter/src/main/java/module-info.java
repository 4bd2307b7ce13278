/** Built-in attention backend "aiter". */
module handoff.plugin.aiter {
    requires handoff.core;
    requires jdk.incubator.vector;

    provides io.handoff.spi.attention.AttentionBackendProvider with io.handoff.plugin.aiter.AiterProvider;
}
