package io.handoff.cluster;

import java.io.IOException;

import static java.util.Objects.requireNonNull;

/** The membership source and the registration that {@code handoff.cluster.discovery} selects. */
public final class Cluster
{
    private Cluster() {}

    /**
     * What a router follows under etcd or Kubernetes discovery (not yet started). Static discovery has no source of
     * its own: the router builds a {@link StaticMembership} from its command line.
     */
    public static Membership membership(ClusterConfig config)
    {
        requireNonNull(config, "config is null");
        return switch (config.discovery()) {
            case STATIC -> throw new IllegalArgumentException("handoff.cluster.discovery = static: the router takes --prefill and --decode URLs");
            case ETCD -> new EtcdMembership(config.etcd());
            case KUBERNETES -> new KubernetesMembership(config.kubernetes());
        };
    }

    /**
     * Announces {@code self} where {@code handoff.cluster.discovery} says, and keeps the announcement alive until the
     * returned registration is closed. Static discovery and Kubernetes announce nothing (see {@link Registration#NONE}).
     *
     * @throws IOException when the store cannot be reached: a server that was told to register and cannot does not
     *         start unannounced
     */
    public static Registration register(ClusterConfig config, Member self)
            throws IOException, InterruptedException
    {
        requireNonNull(config, "config is null");
        requireNonNull(self, "self is null");
        return switch (config.discovery()) {
            case STATIC, KUBERNETES -> Registration.NONE;
            case ETCD -> EtcdRegistration.start(config.etcd(), self);
        };
    }
}
