/** Built-in attention backend "triton". */
module handoff.plugin.triton {
    requires handoff.spi;
    requires handoff.math;
    requires jdk.incubator.vector;

    provides io.handoff.spi.attention.AttentionBackendProvider with io.handoff.plugin.triton.TritonProvider;
}
