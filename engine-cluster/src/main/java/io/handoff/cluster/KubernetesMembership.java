package io.handoff.cluster;

import java.io.IOException;
import java.util.List;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/** The pods a label selector picks, followed through the Kubernetes API. (Being built: start refuses.) */
final class KubernetesMembership
        implements Membership
{
    private final ClusterConfig.Kubernetes config;

    KubernetesMembership(ClusterConfig.Kubernetes config)
    {
        this.config = requireNonNull(config, "config is null");
    }

    @Override
    public void start(Consumer<MembershipView> listener)
            throws IOException
    {
        throw new IOException("kubernetes membership is not built yet");
    }

    @Override
    public MembershipView current()
    {
        return MembershipView.of(List.of());
    }

    @Override
    public String describe()
    {
        return "kubernetes " + config.labelSelector();
    }

    @Override
    public void close()
    {
    }
}
