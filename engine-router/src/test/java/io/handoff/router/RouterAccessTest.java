package io.handoff.router;

import io.handoff.http.base.ApiAccess;
import io.handoff.http.base.ServerConfig;
import io.handoff.http.base.security.ApiKeys;
import io.handoff.http.base.security.RouterAuthentication;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.List;

import static io.handoff.http.testing.TestClusterMac.hmac;
import static io.handoff.router.RouterFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** The router's side of access control: its clients' API keys, and the key and signature it calls its servers with. */
class RouterAccessTest
{
    private static final String GENERATE = "{\"text\": \"hello\", \"rid\": \"r-1\"}";

    @Test
    void withApiKeysAClientNeedsOneAndTheRouterCallsItsServersWithItsOwn()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withApiKeys(ApiKeys.of(List.of("k-router", "k-client"))));
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG, config)) {
            HttpResponse<String> refused = fixture.post("/generate", GENERATE);
            HttpResponse<String> wrong = fixture.post("/v1/completions", "{\"prompt\": \"x\"}", "Bearer nope");

            assertThat(refused.statusCode()).isEqualTo(401);
            assertThat(refused.headers().firstValue("WWW-Authenticate")).contains("Bearer realm=\"handoff\"");
            assertThat(json(refused).at("/error/code").asText()).isEqualTo("missing_api_key");
            assertThat(wrong.statusCode()).isEqualTo(401);
            assertThat(fixture.get("/backends").statusCode()).isEqualTo(401);
            assertThat(fixture.get("/metrics").statusCode()).isEqualTo(401);
            assertThat(fixture.prefill().received).isEmpty();
            assertThat(fixture.decode().received).isEmpty();

            HttpResponse<String> accepted = fixture.post("/generate", GENERATE, "Bearer k-client");

            assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(200);
            assertThat(fixture.prefill().only().authorization()).isEqualTo("Bearer k-router");
            assertThat(fixture.decode().only().authorization()).isEqualTo("Bearer k-router");
            // its health polls and /bootstrap reads carry the key too (a server with keys answers /bootstrap only with one)
            assertThat(fixture.prefill().otherAuthorizations).contains("/bootstrap Bearer k-router").allMatch(call -> call.endsWith(" Bearer k-router"));
            assertThat(fixture.get("/health").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void withAClusterSecretEveryCallToAServerIsSignedOverItsPathAndExactBody()
            throws Exception
    {
        ServerConfig config = ServerConfig.loopback().withAccess(ApiAccess.OPEN.withClusterMac(hmac("cluster secret")));
        RouterAuthentication servers = RouterAuthentication.signed(hmac("cluster secret"), System::currentTimeMillis);
        RouterAuthentication otherCluster = RouterAuthentication.signed(hmac("another secret"), System::currentTimeMillis);
        try (RouterFixture fixture = RouterFixture.start(1, 1, RouterFixture.CONFIG, config)) {
            assertThat(fixture.post("/v1/completions", "{\"prompt\": \"hello\", \"rid\": \"r-2\"}").statusCode()).isEqualTo(200);

            for (FakeBackend.Received call : List.of(fixture.prefill().only(), fixture.decode().only())) {
                assertThat(call.signature()).matches("t=[0-9]+,n=[0-9a-f]{32},mac=[0-9a-f]{64}");
                assertThat(servers.refusal("POST", "/v1/completions", call.bytes(), call.signature())).isEmpty();
                assertThat(otherCluster.refusal("POST", "/v1/completions", call.bytes(), call.signature())).isPresent();
            }
        }
    }

    @Test
    void withoutAClusterSecretNothingIsSignedAndNoKeyIsSent()
            throws Exception
    {
        try (RouterFixture fixture = RouterFixture.start(1, 1)) {
            assertThat(fixture.post("/generate", GENERATE).statusCode()).isEqualTo(200);

            assertThat(fixture.decode().only().signature()).isNull();
            assertThat(fixture.decode().only().authorization()).isNull();
        }
    }
}
