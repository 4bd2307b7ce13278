package io.handoff.http.base.security;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpRequest;
import java.util.Optional;

import static io.handoff.http.testing.TestClusterMac.hmac;
import static org.assertj.core.api.Assertions.assertThat;

/** What the router's calls (and {@code handoff cluster status}'s) carry: the deployment's key and a signature the servers accept. */
class RouterCredentialsTest
{
    @Test
    void aCallCarriesTheKeyAndASignatureOverThePathTheServerSees()
    {
        long now = 1_700_000_000_000L;
        RouterCredentials credentials = new RouterCredentials(Optional.of("key-1"), RouterSigner.signed(hmac("secret"), () -> now));
        URI uri = URI.create("http://10.0.0.5:30000/prefix/metrics");

        HttpRequest request = credentials.apply(HttpRequest.newBuilder(uri).GET(), "GET", uri, new byte[0]).build();

        assertThat(request.headers().firstValue("Authorization")).contains("Bearer key-1");
        String signature = request.headers().firstValue(RouterSignature.HEADER).orElseThrow();
        RouterAuthentication server = RouterAuthentication.signed(hmac("secret"), () -> now);
        assertThat(server.refusal("GET", "/prefix/metrics", new byte[0], signature)).isEmpty();
        assertThat(server.refusal("GET", "/metrics", new byte[0], signature)).isPresent();
    }

    @Test
    void withoutKeysOrSecretACallCarriesNothing()
    {
        URI uri = URI.create("http://10.0.0.5:30000/health");

        HttpRequest request = RouterCredentials.NONE.apply(HttpRequest.newBuilder(uri).GET(), "GET", uri, new byte[0]).build();

        assertThat(request.headers().map()).isEmpty();
    }
}
