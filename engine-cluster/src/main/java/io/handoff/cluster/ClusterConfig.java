package io.handoff.cluster;

import com.typesafe.config.Config;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * {@code handoff.cluster.*} (this module's reference.conf documents each key).
 *
 * @param memberId {@code member-id}; empty: derived (see {@link #memberIdOr})
 * @param advertiseHost {@code advertise-host}; empty: derived from where the server listens
 */
public record ClusterConfig(Discovery discovery, Optional<String> memberId, Optional<String> advertiseHost, Etcd etcd, Kubernetes kubernetes)
{
    /**
     * @param endpoints etcd client URLs, tried in turn; empty unless discovery is etcd
     * @param prefix the key prefix members register under; ends with {@code /}
     */
    public record Etcd(List<URI> endpoints, String prefix, Duration leaseTtl, Duration requestTimeout, Duration retryInterval)
    {
        public Etcd
        {
            endpoints = List.copyOf(endpoints);
            requireNonNull(prefix, "prefix is null");
            if (!prefix.startsWith("/") || !prefix.endsWith("/") || prefix.length() > 200) {
                throw new IllegalArgumentException("handoff.cluster.etcd.prefix must start and end with '/' (e.g. /handoff/members/), was '" + prefix + "'");
            }
            if (leaseTtl.compareTo(Duration.ofSeconds(2)) < 0) {
                throw new IllegalArgumentException("handoff.cluster.etcd.lease-ttl must be at least 2s (etcd grants whole seconds), was " + leaseTtl);
            }
            positive(requestTimeout, "handoff.cluster.etcd.request-timeout");
            positive(retryInterval, "handoff.cluster.etcd.retry-interval");
        }
    }

    /** Empty strings mean "from the pod's service account / environment" (see reference.conf). */
    public record Kubernetes(String apiServer, String namespace, String labelSelector, String roleLabel, String portName, String tokenFile,
            String caFile, Duration retryInterval)
    {
        public Kubernetes
        {
            requireNonNull(apiServer, "apiServer is null");
            requireNonNull(namespace, "namespace is null");
            requireNonNull(labelSelector, "labelSelector is null");
            requireNonNull(roleLabel, "roleLabel is null");
            requireNonNull(portName, "portName is null");
            requireNonNull(tokenFile, "tokenFile is null");
            requireNonNull(caFile, "caFile is null");
            positive(retryInterval, "handoff.cluster.kubernetes.retry-interval");
        }
    }

    public ClusterConfig
    {
        requireNonNull(discovery, "discovery is null");
        requireNonNull(memberId, "memberId is null");
        requireNonNull(advertiseHost, "advertiseHost is null");
        requireNonNull(etcd, "etcd is null");
        requireNonNull(kubernetes, "kubernetes is null");
        if (discovery == Discovery.ETCD && etcd.endpoints().isEmpty()) {
            throw new IllegalArgumentException("handoff.cluster.discovery = etcd needs handoff.cluster.etcd.endpoints, e.g. \"http://10.0.0.2:2379\"");
        }
    }

    public static ClusterConfig from(Config config)
    {
        Config cluster = config.getConfig("handoff.cluster");
        return new ClusterConfig(
                Discovery.parse(cluster.getString("discovery")),
                nonEmpty(cluster.getString("member-id")),
                nonEmpty(cluster.getString("advertise-host")),
                new Etcd(endpoints(cluster.getString("etcd.endpoints")), cluster.getString("etcd.prefix"), cluster.getDuration("etcd.lease-ttl"),
                        cluster.getDuration("etcd.request-timeout"), cluster.getDuration("etcd.retry-interval")),
                new Kubernetes(cluster.getString("kubernetes.api-server"), cluster.getString("kubernetes.namespace"),
                        cluster.getString("kubernetes.label-selector"), cluster.getString("kubernetes.role-label"), cluster.getString("kubernetes.port-name"),
                        cluster.getString("kubernetes.token-file"), cluster.getString("kubernetes.ca-file"), cluster.getDuration("kubernetes.retry-interval")));
    }

    /** {@code member-id} when set, otherwise {@code derived}. */
    public String memberIdOr(String derived)
    {
        return memberId.orElse(derived);
    }

    static List<URI> endpoints(String text)
    {
        List<URI> endpoints = new ArrayList<>();
        for (String part : text.split(",")) {
            String given = part.strip();
            if (given.isEmpty()) {
                continue;
            }
            URI url;
            try {
                url = Member.httpAddress(URI.create(given.contains("://") ? given : "http://" + given));
            }
            catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("handoff.cluster.etcd.endpoints: " + e.getMessage());
            }
            endpoints.add(url);
        }
        return endpoints;
    }

    private static Optional<String> nonEmpty(String text)
    {
        return text.isBlank() ? Optional.empty() : Optional.of(text.strip());
    }

    private static void positive(Duration duration, String key)
    {
        requireNonNull(duration, key + " is null");
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(key + " must be positive, was " + duration);
        }
    }
}
