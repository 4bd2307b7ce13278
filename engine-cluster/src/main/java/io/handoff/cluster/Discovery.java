package io.handoff.cluster;

import java.util.Locale;

/** {@code handoff.cluster.discovery}: where a router finds its servers and where a server announces itself. */
public enum Discovery
{
    /** The router's {@code --prefill}/{@code --decode} lists; servers announce nothing. */
    STATIC,
    /** Keys with leases under {@code handoff.cluster.etcd.prefix}. */
    ETCD,
    /** Pods picked by {@code handoff.cluster.kubernetes.label-selector}, through the Kubernetes API. */
    KUBERNETES;

    public String label()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Discovery parse(String label)
    {
        for (Discovery discovery : values()) {
            if (discovery.label().equals(label)) {
                return discovery;
            }
        }
        throw new IllegalArgumentException("handoff.cluster.discovery is '" + label + "': expected static, etcd or kubernetes");
    }
}
