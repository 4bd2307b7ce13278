/** Built-in attention backend "aiter". */
module handoff.plugin.aiter {
    requires handoff.spi;
    requires handoff.math;
    requires jdk.incubator.vector;

    provides io.handoff.spi.attention.AttentionBackendProvider with io.handoff.plugin.aiter.AiterProvider;
}
