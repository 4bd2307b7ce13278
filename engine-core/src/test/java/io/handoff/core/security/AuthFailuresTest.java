package io.handoff.core.security;

import io.handoff.trace.ConnectionRefusals;
import io.handoff.trace.PeerText;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class AuthFailuresTest
{
    @Test
    void everyRefusalIsCountedByListenerAndReasonButEachAddressIsLoggedAFewTimesPerWindowThenSummarized()
    {
        AtomicLong now = new AtomicLong();
        List<String> lines = new ArrayList<>();
        ConnectionRefusals refusals = new ConnectionRefusals(lines::add, now::get, Duration.ofSeconds(60));
        AuthFailures failures = new AuthFailures(refusals);
        for (int i = 0; i < 1000; i++) {
            failures.refused("control", "10.0.0.1", "protocol", "no hello");
        }
        failures.refused("control", "10.0.0.2", "protocol", "no hello");
        refusals.refused("control", "10.0.0.1", "hello-timeout", "no hello within 5000 ms");
        refusals.refused("transfer", "10.0.0.1", "limit", "too many");

        assertThat(failures.total()).isEqualTo(1001);
        assertThat(refusals.counts()).containsEntry(new ConnectionRefusals.Key("control", "protocol"), 1001L)
                .containsEntry(new ConnectionRefusals.Key("control", "hello-timeout"), 1L)
                .containsEntry(new ConnectionRefusals.Key("transfer", "limit"), 1L);
        assertThat(lines).filteredOn(line -> line.startsWith("control") && line.contains("10.0.0.1")).hasSize(ConnectionRefusals.LOGGED_PER_WINDOW);
        assertThat(lines).filteredOn(line -> line.contains("10.0.0.2")).hasSize(1);
        assertThat(lines).as("another listener has its own share").anySatisfy(line -> assertThat(line).startsWith("transfer").contains("too many"));

        refusals.flush();
        assertThat(lines).noneSatisfy(line -> assertThat(line).contains("more connection(s)"));
        now.addAndGet(Duration.ofSeconds(61).toNanos());
        refusals.flush();
        assertThat(lines).anySatisfy(line -> assertThat(line).contains("refused 998 more connection(s) from 10.0.0.1")
                .contains("hello-timeout=1").contains("protocol=997"));
        // a new window logs again
        int before = lines.size();
        failures.refused("control", "10.0.0.1", "protocol", "no hello");
        assertThat(lines).hasSize(before + 1);
    }

    @Test
    void peerTextInARefusalCannotEndALineOrFloodOne()
    {
        List<String> lines = new ArrayList<>();
        new ConnectionRefusals(lines::add).refused("control", "10.0.0.1\nERROR forged", "malformed", "x".repeat(10_000) + "\r\n");
        assertThat(lines).singleElement().satisfies(line -> assertThat(line).doesNotContain("\n").doesNotContain("\r").hasSizeLessThan(700));
    }

    @Test
    void peerTextCannotEndALineOrFloodOne()
    {
        assertThat(PeerText.clean("decode-1\nERROR forged line\r\u2028")).isEqualTo("decode-1\\u000aERROR forged line\\u000d\\u2028");
        assertThat(PeerText.clean("x".repeat(10_000))).hasSizeLessThan(PeerText.MAX_CHARS + 20).endsWith("(10000 chars)");
        assertThat(PeerText.printable("a\nb\u202ec")).isEqualTo("a?b?c");
    }
}
