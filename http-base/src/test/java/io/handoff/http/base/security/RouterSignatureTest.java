package io.handoff.http.base.security;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

import static io.handoff.http.testing.TestClusterMac.hmac;
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

        assertThat(header).matches("t=1750000000000,n=[0-9a-f]{32},mac=[0-9a-f]{64}");
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
        String otherNonce = header.replaceFirst("n=[0-9a-f]", header.contains("n=0") ? "n=1" : "n=0");
        assertThat(router.refusal("POST", "/generate", BODY, otherNonce)).get().asString().contains("signature does not verify");
        // none of those used it up
        assertThat(router.refusal("POST", "/generate", BODY, header)).isEmpty();
    }

    @Test
    void aSignedCallIsAcceptedOnceAndItsReplayIsRefusedUntilItExpires()
    {
        String header = router.sign("POST", "/generate", BODY);
        String again = router.sign("POST", "/generate", BODY);

        assertThat(router.refusal("POST", "/generate", BODY, header)).isEmpty();
        assertThat(router.refusal("POST", "/generate", BODY, header)).get().asString().contains("used before: a replayed call");
        // the same call signed anew (the router signs every call) is another nonce
        assertThat(again).isNotEqualTo(header);
        assertThat(router.refusal("POST", "/generate", BODY, again)).isEmpty();
        clock.addAndGet(RouterSignature.WINDOW.toMillis());
        assertThat(router.refusal("POST", "/generate", BODY, header)).get().asString().contains("replayed");
        // past the window the timestamp refuses it, and its record is gone
        clock.addAndGet(1);
        assertThat(router.refusal("POST", "/generate", BODY, header)).get().asString().contains("away from this server's clock");
        router.refusal("POST", "/generate", BODY, router.sign("POST", "/generate", BODY));
        assertThat(router.liveSignatures()).isEqualTo(1);
    }

    @Test
    void aFloodOfSignaturesIsBoundedFailsClosedWhenFullAndAFloodOfForgedOnesRecordsNothing()
    {
        RouterSignature server = new RouterSignature(hmac("the cluster secret"), clock::get, 8);
        RouterSignature stranger = new RouterSignature(hmac("a guess"), clock::get);
        for (int i = 0; i < 10_000; i++) {
            assertThat(server.refusal("POST", "/generate", BODY, stranger.sign("POST", "/generate", BODY))).isPresent();
        }
        assertThat(server.liveSignatures()).isZero();

        for (int i = 0; i < 8; i++) {
            assertThat(server.refusal("POST", "/generate", BODY, router.sign("POST", "/generate", BODY))).isEmpty();
            clock.addAndGet(1_000);
        }
        String ninth = router.sign("POST", "/generate", BODY);
        assertThat(server.refusal("POST", "/generate", BODY, ninth)).get().asString()
                .contains("holds 8 router signatures of the last 60 s", "retry");
        assertThat(server.liveSignatures()).isEqualTo(8);

        // the first expires 60 s after its timestamp: one more fits, and nothing that was refused for room is remembered
        clock.addAndGet(RouterSignature.WINDOW.toMillis() - 8_000 + 1);
        assertThat(server.refusal("POST", "/generate", BODY, ninth)).isEmpty();
        assertThat(server.liveSignatures()).isEqualTo(8);
    }

    @Test
    void aSignatureIsAcceptedWithinSixtySecondsEitherWayAndNotBeyond()
    {
        String[] headers = new String[4];
        for (int i = 0; i < headers.length; i++) {
            headers[i] = router.sign("POST", "/generate", BODY);
        }

        clock.addAndGet(60_000);
        assertThat(router.refusal("POST", "/generate", BODY, headers[0])).isEmpty();
        clock.addAndGet(1);
        assertThat(router.refusal("POST", "/generate", BODY, headers[1])).get().asString()
                .contains("timestamp is 60001 ms away from this server's clock", "are the clocks synchronised?");
        clock.addAndGet(-120_001);
        assertThat(router.refusal("POST", "/generate", BODY, headers[2])).isEmpty();
        clock.addAndGet(-1);
        assertThat(router.refusal("POST", "/generate", BODY, headers[3])).isPresent();
    }

    @Test
    void anotherSecretAMissingHeaderOrAMalformedOneIsRefusedSayingWhich()
    {
        String foreign = new RouterSignature(hmac("another secret"), clock::get).sign("POST", "/generate", BODY);

        assertThat(router.refusal("POST", "/generate", BODY, foreign)).get().asString().contains("a different cluster secret");
        assertThat(router.refusal("POST", "/generate", BODY, null)).get().asString().contains("carries no X-Handoff-Cluster-Auth header");
        assertThat(router.refusal("POST", "/generate", BODY, "mac=00,t=1")).get().asString().contains("is not t=<unix millis>,n=<32 hex digits>,mac=<hex>");
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
