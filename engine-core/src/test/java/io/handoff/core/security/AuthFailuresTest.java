package io.handoff.core.security;

import io.handoff.trace.PeerText;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class AuthFailuresTest
{
    @Test
    void everyRefusalIsCountedButEachAddressAndKindIsLoggedOncePerInterval()
    {
        AtomicLong now = new AtomicLong();
        AuthFailures failures = new AuthFailures(now::get, Duration.ofSeconds(60));
        try (LogWarnings warnings = new LogWarnings()) {
            for (int i = 0; i < 1000; i++) {
                failures.refused("the control endpoint", "10.0.0.1", "protocol", "no hello");
            }
            failures.refused("the control endpoint", "10.0.0.2", "protocol", "no hello");
            now.addAndGet(Duration.ofSeconds(61).toNanos());
            failures.refused("the control endpoint", "10.0.0.1", "protocol", "no hello");

            failures.refused("the control endpoint", "10.0.0.1", "SECRET_MISMATCH", "the cluster secrets differ");

            assertThat(failures.total()).isEqualTo(1003);
            assertThat(warnings.lines()).as("another kind of refusal from a flooding address is still logged")
                    .anySatisfy(line -> assertThat(line).contains("10.0.0.1").contains("the cluster secrets differ"));
            assertThat(warnings.lines()).filteredOn(line -> line.contains("10.0.0.1")).hasSize(3);
            assertThat(warnings.lines()).filteredOn(line -> line.contains("10.0.0.2")).hasSize(1);
            assertThat(warnings.lines()).anySatisfy(line -> assertThat(line).contains("999 more refusals like it from this address"));
        }
    }

    @Test
    void peerTextCannotEndALineOrFloodOne()
    {
        assertThat(PeerText.clean("decode-1\nERROR forged line\r\u2028")).isEqualTo("decode-1\\u000aERROR forged line\\u000d\\u2028");
        assertThat(PeerText.clean("x".repeat(10_000))).hasSizeLessThan(PeerText.MAX_CHARS + 20).endsWith("(10000 chars)");
        assertThat(PeerText.printable("a\nb\u202ec")).isEqualTo("a?b?c");
    }
}
