package io.handoff.http.security;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

import static io.handoff.http.security.TestClusterMac.hmac;
import static org.assertj.core.api.Assertions.assertThat;

/** The router's X-Handoff-Cluster-Auth header, signed and checked with a test HMAC and a clock the test moves. */
class RouterSignatureTest
{
    private static final byte[] BODY = "{\"text\":\"hi\",\"bootstrap_room\":7}".getBytes(StandardCharsets.UTF_8);

    private final AtomicLong clock = new AtomicLong(1_750_000_000_000L);
    private final RouterSignature router = new RouterSignature(hmac("the cluster secret"), clock::get);

    @Test
    void aSignedCallVerifiesAndItsHeaderHasTheDocumentedShape()
    {
        String header = router.sign("POST", "/generate", BODY);

        assertThat(header).matches("t=1750000000000,mac=[0-9a-f]{64}");
        assertThat(router.refusal("POST", "/generate", BODY, header)).isEmpty();
    }

    @Test
    void changingTheMethodPathOrAnyByteOfTheBodyBreaksTheSignature()
    {
        String header = router.sign("POST", "/generate", BODY);
        byte[] changed = BODY.clone();
        changed[changed.length - 2] = '8';

        assertThat(router.refusal("POST", "/generate", changed, header)).get().asString().contains("signature does not verify");
        assertThat(router.refusal("POST", "/v1/completions", BODY, header)).isPresent();
        assertThat(router.refusal("PUT", "/generate", BODY, header)).isPresent();
        assertThat(router.refusal("POST", "/generate", BODY, header.replace("t=1750000000000", "t=1750000000001"))).isPresent();
    }

    @Test
    void aSignatureIsAcceptedWithinSixtySecondsEitherWayAndNotBeyond()
    {
        String header = router.sign("POST", "/generate", BODY);

        clock.addAndGet(60_000);
        assertThat(router.refusal("POST", "/generate", BODY, header)).isEmpty();
        clock.addAndGet(1);
        assertThat(router.refusal("POST", "/generate", BODY, header)).get().asString()
                .contains("timestamp is 60001 ms away from this server's clock", "are the clocks synchronised?");
        clock.addAndGet(-120_001);
        assertThat(router.refusal("POST", "/generate", BODY, header)).isEmpty();
        clock.addAndGet(-1);
        assertThat(router.refusal("POST", "/generate", BODY, header)).isPresent();
    }

    @Test
    void anotherSecretAMissingHeaderOrAMalformedOneIsRefusedSayingWhich()
    {
        String foreign = new RouterSignature(hmac("another secret"), clock::get).sign("POST", "/generate", BODY);

        assertThat(router.refusal("POST", "/generate", BODY, foreign)).get().asString().contains("a different cluster secret");
        assertThat(router.refusal("POST", "/generate", BODY, null)).get().asString().contains("carries no X-Handoff-Cluster-Auth header");
        assertThat(router.refusal("POST", "/generate", BODY, "mac=00,t=1")).get().asString().contains("is not t=<unix millis>,mac=<hex>");
        assertThat(router.refusal("POST", "/generate", BODY, "t=1750000000000,mac=zz")).get().asString().contains("is not t=<unix millis>");
        assertThat(router.refusal("POST", "/generate", BODY, "t=99999999999999999999,mac=00")).isPresent();
    }

    @Test
    void theServerSideAuthenticationAndTheRoutersSignerAgree()
    {
        ClusterMac mac = hmac("the cluster secret");
        RouterSigner signer = RouterSigner.signed(mac, clock::get);
        RouterAuthentication authentication = RouterAuthentication.signed(mac, clock::get);

        String header = signer.signature("POST", "/v1/completions", BODY).orElseThrow();

        assertThat(authentication.refusal("POST", "/v1/completions", BODY, header)).isEmpty();
        assertThat(authentication.refusal("POST", "/v1/completions", BODY, null)).isPresent();
        assertThat(authentication.insecure()).isFalse();
        assertThat(RouterAuthentication.INSECURE.refusal("POST", "/generate", BODY, null)).isEmpty();
        assertThat(RouterAuthentication.INSECURE.insecure()).isTrue();
        assertThat(RouterSigner.NONE.signature("POST", "/generate", BODY)).isEmpty();
    }

    @Test
    void aTagThatIsNotHexNeverVerifies()
    {
        ClusterMac mac = hmac("k");
        assertThat(mac.verify(BODY, "not hex")).isFalse();
        assertThat(mac.verify(BODY, "")).isFalse();
    }
}
