package io.handoff.plugin.nixl;

/** The transfer contract and nixl's own transfer tests over UCX's tcp transport. */
class TcpTransferTest
        extends NixlTransferContract
{
    @Override
    protected String tls()
    {
        return "tcp";
    }
}
