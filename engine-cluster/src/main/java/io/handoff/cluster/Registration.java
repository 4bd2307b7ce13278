package io.handoff.cluster;

/**
 * A server's announcement of itself in the membership store, kept alive while the server runs: in etcd, a key
 * under a lease it keeps alive; on Kubernetes, nothing of its own (the pod and its readiness are the announcement).
 */
public interface Registration
        extends AutoCloseable
{
    /** Nothing to announce: static discovery, or a store that announces for the server (Kubernetes). */
    Registration NONE = new Registration()
    {
        @Override
        public void draining()
        {
        }

        @Override
        public void close()
        {
        }
    };

    /** Announces that this server is shutting down: routers stop sending it new requests, it finishes what it has. */
    void draining();

    /** Withdraws the announcement (revokes the lease); routers drop the member. */
    @Override
    void close();
}
