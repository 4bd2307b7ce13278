package io.handoff.cli;

import io.handoff.cluster.Cluster;
import io.handoff.cluster.ClusterConfig;
import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.Registration;
import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.runtime.ComputeEngine;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;

/**
 * What {@code handoff serve --role prefill|decode} publishes of itself to the membership store that
 * {@code handoff.cluster.discovery} names: its id, role, incarnation, where its HTTP API answers, the model's
 * compatibility hash and its KV pool's pages.
 */
final class ClusterAnnouncement
{
    private ClusterAnnouncement() {}

    /** Registers the server listening at {@code address}; {@link Registration#NONE} for a colocated server or static discovery. */
    static Registration register(ClusterConfig cluster, ComputeEngine compute, String listenHost, InetSocketAddress address)
            throws IOException, InterruptedException
    {
        if (compute.disaggregation().isEmpty()) {
            return Registration.NONE;
        }
        Disaggregation disaggregation = compute.disaggregation().get();
        MemberRole role = disaggregation.role() == Disaggregation.Role.PREFILL ? MemberRole.PREFILL : MemberRole.DECODE;
        String host = cluster.advertiseHost().orElseGet(() -> advertisedHost(listenHost));
        String hostPort = (host.contains(":") ? "[" + host + "]" : host) + ":" + address.getPort();
        String defaultId = System.getenv().getOrDefault("HOSTNAME", "").isBlank() || cluster.discovery() != io.handoff.cluster.Discovery.KUBERNETES
                ? hostPort : System.getenv("HOSTNAME");
        Member self = new Member(cluster.memberIdOr(defaultId), role, disaggregation.incarnation(), URI.create("http://" + hostPort),
                compute.model().compatibilityHash(), compute.kv().pages(), false);
        try {
            return Cluster.register(cluster, self);
        }
        catch (IOException e) {
            throw new IllegalStateException("cannot register this " + role.label() + " server as member " + self.id() + " with handoff.cluster.discovery = "
                    + cluster.discovery().label() + ": " + e.getMessage() + "; check that the store is up and handoff.cluster." + cluster.discovery().label()
                    + ".* names it (the server does not run unannounced)", e);
        }
    }

    /** The configured listen host, or where it is every interface, this machine's address as its host name resolves. */
    static String advertisedHost(String listenHost)
    {
        if (!listenHost.equals("0.0.0.0") && !listenHost.equals("::") && !listenHost.isBlank()) {
            return listenHost;
        }
        try {
            return InetAddress.getLocalHost().getHostAddress();
        }
        catch (UnknownHostException e) {
            throw new IllegalArgumentException("handoff.server.host listens on every interface and this machine's host name does not resolve ("
                    + e.getMessage() + "): set handoff.cluster.advertise-host to the address other machines reach this server at");
        }
    }
}
