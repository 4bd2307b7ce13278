package io.handoff.http.base.security;

import java.util.Optional;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/**
 * Who may send a prefill or decode the router's fields ({@code bootstrap_room}, {@code bootstrap_generation},
 * {@code bootstrap_host}): with them a client picks where a decode connects and which room a prefill serves, so
 * with a cluster secret only the router may, proven by its {@link RouterSignature}.
 */
public interface RouterAuthentication
{
    /**
     * No cluster secret: every client is taken for the router. Safe only while nothing but the deployment's own
     * processes can reach the servers (the core binds cluster listeners to loopback without a secret).
     */
    RouterAuthentication INSECURE = (method, path, body, signature) -> Optional.empty();

    /** Empty when this request comes from the router; else why it is not taken as the router's, for the client's error. */
    Optional<String> refusal(String method, String path, byte[] body, String signatureHeader);

    /** With a cluster secret: only calls that carry a valid {@link RouterSignature#HEADER}. */
    static RouterAuthentication signed(ClusterMac mac, LongSupplier clockMillis)
    {
        RouterSignature signature = new RouterSignature(requireNonNull(mac, "mac is null"), clockMillis);
        return signature::refusal;
    }

    /** Whether this is {@link #INSECURE} (the startup log says so). */
    default boolean insecure()
    {
        return this == INSECURE;
    }
}
