package io.handoff.cluster;

import java.io.IOException;
import java.util.List;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/** The members registered under an etcd prefix, followed with a watch. (Being built: start refuses.) */
final class EtcdMembership
        implements Membership
{
    private final ClusterConfig.Etcd config;

    EtcdMembership(ClusterConfig.Etcd config)
    {
        this.config = requireNonNull(config, "config is null");
    }

    @Override
    public void start(Consumer<MembershipView> listener)
            throws IOException
    {
        throw new IOException("etcd membership is not built yet");
    }

    @Override
    public MembershipView current()
    {
        return MembershipView.of(List.of());
    }

    @Override
    public String describe()
    {
        return "etcd " + config.endpoints() + " " + config.prefix();
    }

    @Override
    public void close()
    {
    }
}
