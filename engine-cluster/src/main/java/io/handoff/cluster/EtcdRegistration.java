package io.handoff.cluster;

import java.io.IOException;

/** A member's key under an etcd lease it keeps alive. (Being built: start refuses.) */
final class EtcdRegistration
{
    private EtcdRegistration() {}

    static Registration start(ClusterConfig.Etcd config, Member self)
            throws IOException
    {
        throw new IOException("etcd registration is not built yet");
    }
}
