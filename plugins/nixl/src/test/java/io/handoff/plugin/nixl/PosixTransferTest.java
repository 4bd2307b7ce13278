package io.handoff.plugin.nixl;

/** The transfer contract and nixl's own transfer tests over UCX's POSIX shared-memory transport. */
class PosixTransferTest
        extends NixlTransferContract
{
    @Override
    protected String tls()
    {
        return "posix,self";
    }
}
