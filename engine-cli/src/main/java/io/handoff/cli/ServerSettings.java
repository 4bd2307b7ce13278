package io.handoff.cli;

import io.handoff.core.runtime.Engine;
import io.handoff.core.security.ClusterSecurity;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.ClusterMac;
import io.handoff.http.base.security.RouterSignature;

import java.util.Optional;

/** A server's or router's HTTP settings, read from a started engine's configuration and security settings. */
public final class ServerSettings
{
    private ServerSettings() {}

    public static ServerConfig of(Engine engine)
    {
        return ServerConfig.from(engine.config().config(), routerMac(engine.security()));
    }

    /**
     * The MAC the router signs its calls with and a prefill or decode checks them with: the cluster secret's, under
     * the router's own context, so a router signature is no proof on any other channel. None without a secret.
     */
    public static Optional<ClusterMac> routerMac(ClusterSecurity security)
    {
        return security.secret().map(secret -> message -> secret.tag(RouterSignature.CONTEXT, message));
    }
}
