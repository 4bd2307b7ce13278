package io.handoff.http.base.security;

import org.junit.jupiter.api.Test;

import java.util.List;

import static io.handoff.http.base.security.ApiKeys.Verdict.ACCEPTED;
import static io.handoff.http.base.security.ApiKeys.Verdict.MISSING;
import static io.handoff.http.base.security.ApiKeys.Verdict.WRONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ApiKeysTest
{
    private final ApiKeys keys = ApiKeys.of(List.of("k-first", "k-second-and-longer"));

    @Test
    void everyConfiguredKeyIsAcceptedAsABearerTokenWhateverTheSchemesCase()
    {
        assertThat(keys.check("Bearer k-first")).isEqualTo(ACCEPTED);
        assertThat(keys.check("Bearer k-second-and-longer")).isEqualTo(ACCEPTED);
        assertThat(keys.check("bearer k-first")).isEqualTo(ACCEPTED);
        assertThat(keys.check("BEARER   k-first  ")).isEqualTo(ACCEPTED);
    }

    @Test
    void aMissingHeaderOrAnotherSchemeIsMissingAndAnyOtherTokenIsWrong()
    {
        assertThat(keys.check(null)).isEqualTo(MISSING);
        assertThat(keys.check("Basic azpr")).isEqualTo(MISSING);
        assertThat(keys.check("k-first")).isEqualTo(MISSING);
        assertThat(keys.check("Bearer ")).isEqualTo(WRONG);
        assertThat(keys.check("Bearer k-firs")).isEqualTo(WRONG);
        assertThat(keys.check("Bearer k-first-")).isEqualTo(WRONG);
        assertThat(keys.check("Bearer K-FIRST")).isEqualTo(WRONG);
    }

    @Test
    void keysAreComparedAsFixedLengthDigestsAgainstEveryKey()
    {
        // the comparison sees 32 bytes whatever was sent, so its time says nothing about a key's length
        assertThat(ApiKeys.digest("a")).hasSize(32);
        assertThat(ApiKeys.digest("a".repeat(100_000))).hasSize(32);
        byte[] last = ApiKeys.digest("third");
        List<byte[]> digests = List.of(ApiKeys.digest("first"), ApiKeys.digest("second"), last);
        byte[] almost = last.clone();
        almost[31] ^= 1;

        assertThat(ApiKeys.anyEqual(ApiKeys.digest("third"), digests)).isTrue();
        assertThat(ApiKeys.anyEqual(ApiKeys.digest("first"), digests)).isTrue();
        assertThat(ApiKeys.anyEqual(almost, digests)).isFalse();
        assertThat(ApiKeys.anyEqual(ApiKeys.digest("third"), List.of())).isFalse();
    }

    @Test
    void noKeysMeansNoAuthenticationAndTheFirstKeyIsWhatTheRouterSends()
    {
        assertThat(ApiKeys.NONE.required()).isFalse();
        assertThat(ApiKeys.of(List.of()).required()).isFalse();
        assertThat(keys.required()).isTrue();
        assertThat(keys.count()).isEqualTo(2);
        assertThat(keys.ownKey()).contains("k-first");
    }

    @Test
    void anEmptyKeyOrOneWithWhitespaceIsRefusedByPositionWithoutShowingIt()
    {
        assertThatThrownBy(() -> ApiKeys.of(List.of("good", "")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("API key 2 of 2 is empty or contains whitespace");
        assertThatThrownBy(() -> ApiKeys.of(List.of("has space")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("API key 1 of 1")
                .hasMessageNotContaining("has space");
    }

    @Test
    void itsTextNeverShowsAKey()
    {
        assertThat(keys.toString()).isEqualTo("2 API key(s)").doesNotContain("k-first");
        assertThat(ApiKeys.NONE.toString()).isEqualTo("no API keys");
    }
}
