package io.handoff.http.base;

import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.base.security.ClusterMac;
import io.handoff.http.base.security.RouterAuthentication;
import io.handoff.http.base.security.RouterCredentials;
import io.handoff.http.base.security.RouterSigner;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Who may call the HTTP API: the API keys ({@code handoff.server.api-keys}, {@code api-key-file}), whether
 * debug endpoints exist ({@code handoff.server.debug-endpoints}), and the cluster MAC that proves the router's
 * calls (none without a cluster secret).
 */
public record ApiAccess(ApiKeys apiKeys, boolean debugEndpoints, Optional<ClusterMac> clusterMac)
{
    /** No keys, no debug endpoints, no cluster secret: how the API behaved before it had access control. */
    public static final ApiAccess OPEN = new ApiAccess(ApiKeys.NONE, false, Optional.empty());

    public ApiAccess
    {
        requireNonNull(apiKeys, "apiKeys is null");
        requireNonNull(clusterMac, "clusterMac is null");
    }

    /** How a prefill or decode tells the router's calls from a client's. */
    public RouterAuthentication routerAuthentication()
    {
        return clusterMac.map(mac -> RouterAuthentication.signed(mac, System::currentTimeMillis)).orElse(RouterAuthentication.INSECURE);
    }

    /** How the router signs its calls. */
    public RouterSigner routerSigner()
    {
        return clusterMac.map(mac -> RouterSigner.signed(mac, System::currentTimeMillis)).orElse(RouterSigner.NONE);
    }

    /** What the router's calls (and {@code handoff cluster status}'s) carry: this deployment's own key and the router's signature. */
    public RouterCredentials routerCredentials()
    {
        return new RouterCredentials(apiKeys.ownKey(), routerSigner());
    }

    public ApiAccess withApiKeys(ApiKeys keys)
    {
        return new ApiAccess(keys, debugEndpoints, clusterMac);
    }

    public ApiAccess withDebugEndpoints(boolean enabled)
    {
        return new ApiAccess(apiKeys, enabled, clusterMac);
    }

    public ApiAccess withClusterMac(ClusterMac mac)
    {
        return new ApiAccess(apiKeys, debugEndpoints, Optional.of(mac));
    }
}
