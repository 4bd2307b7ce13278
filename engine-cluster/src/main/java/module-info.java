/**
 * Cluster membership: which prefill and decode servers exist, where they answer, and which incarnation of each is
 * running. A router follows a {@link io.handoff.cluster.Membership}; a server announces itself with a
 * {@link io.handoff.cluster.Registration}. Membership lives on systems that exist for it (etcd leases, the Kubernetes
 * API), not on a protocol of Handoff's own.
 */
module handoff.cluster {
    requires handoff.http.base;
    requires typesafe.config;
    requires com.fasterxml.jackson.databind;
    requires java.net.http;
    requires org.apache.logging.log4j;

    exports io.handoff.cluster to handoff.http, handoff.router, handoff.cli, handoff.tools;
}
