package io.handoff.plugin.nixl;

/** The transfer contract and nixl's own transfer tests over UCX's System V shared-memory transport. */
class SysvTransferTest
        extends NixlTransferContract
{
    @Override
    protected String tls()
    {
        return "sysv,self";
    }
}
