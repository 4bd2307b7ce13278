package io.handoff.http;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.JsonFields;
import io.handoff.http.base.security.RouterAuthentication;
import io.handoff.http.base.security.RouterSigner;
import io.handoff.spi.transfer.RoomKey;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static io.handoff.http.testing.TestClusterMac.hmac;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.InstanceOfAssertFactories.type;

/** The router's fields on a prefill's or decode's request: their syntax (400, never a 500 later) and who may send them (403). */
class BootstrapTest
{
    private static final Bootstrap DECODE = new Bootstrap(Optional.of(Disaggregation.Role.DECODE), RouterAuthentication.INSECURE);

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "not-a-host          | it has no port",
            "127.0.0.1           | it has no port",
            "10.0.0.5:99999      | the port must be a number in 1..65535",
            "10.0.0.5:0          | the port must be a number in 1..65535",
            "10.0.0.5:-1         | the port must be a number in 1..65535",
            "10.0.0.5:12ab       | the port must be a number in 1..65535",
            "10.0.0.5:           | the port must be a number in 1..65535",
            ":41234              | the host is not a DNS name or an IP address",
            "bad_host:41234      | the host is not a DNS name or an IP address",
            "a..b:41234          | the host is not a DNS name or an IP address",
            "-lead.example:41234 | the host is not a DNS name or an IP address",
            "'http://p:1'        | the host is not a DNS name or an IP address",
            "'p :1'              | the host is not a DNS name or an IP address",
            "::1:41234           | an IPv6 host must be written in brackets",
            "[not::v6::]:41234   | the bracketed host is not an IPv6 address",
            "[10.0.0.5]:41234    | the bracketed host is not an IPv6 address"})
    void aBootstrapHostThatIsNotHostColonPortIs400NamingTheField(String host, String why)
    {
        assertThatThrownBy(() -> ticket(DECODE, "{\"bootstrap_room\": 1, \"bootstrap_host\": \"" + host + "\"}"))
                .asInstanceOf(type(ApiError.class))
                .satisfies(error -> {
                    assertThat(error.status()).isEqualTo(400);
                    assertThat(error.param()).contains("bootstrap_host");
                    assertThat(error.getMessage()).contains("bootstrap_host = \"" + host + "\" is not host:port", why);
                });
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.5:41234", "prefill-1.cluster.local:7001", "localhost:1", "[::1]:65535", "[fe80::1]:30001"})
    void aWellFormedBootstrapHostIsTakenAsItIs(String host)
    {
        assertThat(ticket(DECODE, "{\"bootstrap_room\": 9, \"bootstrap_generation\": 2, \"bootstrap_host\": \"" + host + "\"}"))
                .contains(new RoomTicket(new RoomKey(9, 2), host));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "-1      | bootstrap_room must be in 0..",
            "1.5     | bootstrap_room must be an integer, got the number 1.5",
            "'\"7\"' | bootstrap_room must be an integer, got the string \"7\""})
    void aBootstrapRoomThatIsNotANonNegativeIntegerIs400(String room, String message)
    {
        assertThatThrownBy(() -> ticket(DECODE, "{\"bootstrap_room\": " + room + ", \"bootstrap_host\": \"10.0.0.5:1\"}"))
                .asInstanceOf(type(ApiError.class))
                .satisfies(error -> {
                    assertThat(error.status()).isEqualTo(400);
                    assertThat(error.param()).contains("bootstrap_room");
                    assertThat(error.getMessage()).contains(message);
                });
    }

    @Test
    void withAClusterSecretTheFieldsAreTakenOnlyFromTheSignedRouter()
    {
        AtomicLong clock = new AtomicLong(1_750_000_000_000L);
        Bootstrap decode = new Bootstrap(Optional.of(Disaggregation.Role.DECODE), RouterAuthentication.signed(hmac("s"), clock::get));
        String body = "{\"bootstrap_room\": 3, \"bootstrap_host\": \"10.0.0.5:41234\"}";
        String signature = RouterSigner.signed(hmac("s"), clock::get).signature("POST", "/generate", bytes(body)).orElseThrow();
        String foreign = RouterSigner.signed(hmac("not s"), clock::get).signature("POST", "/generate", bytes(body)).orElseThrow();

        assertThat(decode.ticket(JsonFields.parse(bytes(body)), "POST", "/generate", bytes(body), signature))
                .contains(new RoomTicket(new RoomKey(3, 0), "10.0.0.5:41234"));
        // the accepted signature again is a replay
        for (String refused : new String[] {null, foreign, signature}) {
            assertThatThrownBy(() -> decode.ticket(JsonFields.parse(bytes(body)), "POST", "/generate", bytes(body), refused))
                    .asInstanceOf(type(ApiError.class))
                    .satisfies(error -> {
                        assertThat(error.status()).isEqualTo(403);
                        assertThat(error.code()).isEqualTo("router_authentication_failed");
                        assertThat(error.param()).contains("bootstrap_host");
                        assertThat(error.getMessage()).contains("'bootstrap_host' is accepted only from the router");
                    });
        }
        assertThatThrownBy(() -> decode.ticket(JsonFields.parse(bytes(body)), "POST", "/generate", bytes(body), signature))
                .hasMessageContaining("a replayed call");
    }

    @Test
    void bootstrapLocalAsksADecodeToComputeThePromptItselfAndIsTheRoutersOnlyWithASecret()
    {
        assertThat(ticket(DECODE, "{\"bootstrap_local\": true}")).isEmpty();
        Bootstrap prefill = new Bootstrap(Optional.of(Disaggregation.Role.PREFILL), RouterAuthentication.INSECURE);
        for (String refused : new String[] {"{\"bootstrap_local\": true, \"bootstrap_room\": 4}", "{\"bootstrap_local\": true, \"bootstrap_host\": \"p:1\"}"}) {
            assertThatThrownBy(() -> ticket(DECODE, refused)).asInstanceOf(type(ApiError.class))
                    .satisfies(error -> assertThat(error.param()).contains("bootstrap_local"));
        }
        assertThatThrownBy(() -> ticket(prefill, "{\"bootstrap_local\": true}")).asInstanceOf(type(ApiError.class))
                .satisfies(error -> assertThat(error.getMessage()).contains("it goes to a decode, without a room"));

        AtomicLong clock = new AtomicLong(1_750_000_000_000L);
        Bootstrap signed = new Bootstrap(Optional.of(Disaggregation.Role.DECODE), RouterAuthentication.signed(hmac("s"), clock::get));
        assertThatThrownBy(() -> ticket(signed, "{\"bootstrap_local\": true}")).asInstanceOf(type(ApiError.class))
                .satisfies(error -> assertThat(error.status()).isEqualTo(403));
    }

    @Test
    void aColocatedServerStillRefusesTheFieldsAsOutOfPlace()
    {
        Bootstrap colocated = new Bootstrap(Optional.empty(), RouterAuthentication.INSECURE);

        assertThatThrownBy(() -> ticket(colocated, "{\"bootstrap_room\": 1, \"bootstrap_host\": \"127.0.0.1\"}"))
                .asInstanceOf(type(ApiError.class))
                .satisfies(error -> assertThat(error.code()).isEqualTo("unexpected_field"));
    }

    private static Optional<RoomTicket> ticket(Bootstrap bootstrap, String body)
    {
        return bootstrap.ticket(JsonFields.parse(bytes(body)), "POST", "/generate", bytes(body), null);
    }

    private static byte[] bytes(String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
