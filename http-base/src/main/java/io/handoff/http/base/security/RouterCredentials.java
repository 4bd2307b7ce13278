package io.handoff.http.base.security;

import java.net.URI;
import java.net.http.HttpRequest;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a call to a prefill or decode carries on the deployment's behalf: the API key (the first of
 * {@code handoff.server.api-keys}: a deployment's processes share one list) and, with a cluster secret, the router's
 * {@link RouterSignature}. The router's calls carry it, and so do {@code handoff cluster status}'s.
 */
public record RouterCredentials(Optional<String> apiKey, RouterSigner signer)
{
    public static final RouterCredentials NONE = new RouterCredentials(Optional.empty(), RouterSigner.NONE);

    public RouterCredentials
    {
        requireNonNull(apiKey, "apiKey is null");
        requireNonNull(signer, "signer is null");
    }

    /** Adds the key and the signature over what the server will see as the path ({@code uri}'s: a server URL may have a prefix). */
    public HttpRequest.Builder apply(HttpRequest.Builder request, String method, URI uri, byte[] body)
    {
        apiKey.ifPresent(key -> request.header("Authorization", "Bearer " + key));
        signer.signature(method, uri.getPath(), body).ifPresent(signature -> request.header(RouterSignature.HEADER, signature));
        return request;
    }
}
