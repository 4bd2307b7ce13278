package io.handoff.http.base.security;

import java.util.Optional;
import java.util.function.LongSupplier;

import static java.util.Objects.requireNonNull;

/** The router's side of {@link RouterAuthentication}: the signature header for a call, or none without a cluster secret. */
public interface RouterSigner
{
    RouterSigner NONE = (method, path, body) -> Optional.empty();

    /** The {@link RouterSignature#HEADER} value for {@code method path} with {@code body}, if this router signs. */
    Optional<String> signature(String method, String path, byte[] body);

    static RouterSigner signed(ClusterMac mac, LongSupplier clockMillis)
    {
        RouterSignature signature = new RouterSignature(requireNonNull(mac, "mac is null"), clockMillis);
        return (method, path, body) -> Optional.of(signature.sign(method, path, body));
    }
}
