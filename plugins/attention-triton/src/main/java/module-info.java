/** Built-in attention backend "triton". */
module handoff.plugin.triton {
    requires handoff.core;

    provides io.handoff.spi.attention.AttentionBackendProvider with io.handoff.plugin.triton.TritonProvider;
}
