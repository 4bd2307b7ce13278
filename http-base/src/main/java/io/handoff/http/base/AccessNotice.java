package io.handoff.http.base;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The startup lines that say who may use a server or router: its keys (how many, never which), its rate limit,
 * and whether the router's fields are authenticated. Open access on an address other machines can reach is a
 * warning, not an error: a deployment behind its own gateway may want exactly that.
 */
public final class AccessNotice
{
    private static final Logger log = LogManager.getLogger(AccessNotice.class);

    private AccessNotice() {}

    /** @param takesRouterFields a prefill or decode, which takes {@code bootstrap_*} fields from its router */
    public static void log(ServerConfig config, boolean takesRouterFields)
    {
        boolean local = DebugEndpoints.loopback(config.host());
        ApiAccess access = config.access();
        if (access.apiKeys().required()) {
            log.info("HTTP API: {} required (Authorization: Bearer); /health is open", access.apiKeys());
        }
        else if (local) {
            log.info("HTTP API: no API keys (handoff.server.api-keys); only this machine can reach {}", config.host());
        }
        else {
            log.warn("HTTP API: no API keys (handoff.server.api-keys): every client that reaches {} may use it", config.host());
        }
        RequestLimits limits = config.limits();
        if (limits.rateLimit() > 0) {
            log.info("HTTP API: at most {} request(s) per second per client address, {} at once", limits.rateLimit(), limits.rateLimitBurst());
        }
        if (access.debugEndpoints()) {
            (local ? log.atInfo() : log.atWarn()).log("HTTP API: debug endpoints (/debug/requests/RID) are on (handoff.server.debug-endpoints){}",
                    local ? "; only this machine can reach " + config.host() : "");
        }
        if (takesRouterFields && access.routerAuthentication().insecure()) {
            (local ? log.atInfo() : log.atWarn()).log("HTTP API: bootstrap_room and bootstrap_host are taken from any client (no cluster secret);"
                    + " only the router should be able to reach {}", config.host());
        }
    }
}
