package io.handoff.core.security;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.handoff.trace.PeerText;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Whatever a peer sends during the cluster handshake, either side either completes it or refuses with an
 * {@link AuthenticationException}; and {@link PeerText} leaves nothing in a peer's text that could break a log line.
 */
class ClusterHandshakeFuzzTest
{
    private static final ClusterSecret SECRET = ClusterSecret.of(new byte[32]);
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    /** A connection whose peer sends exactly {@code received}, then closes. */
    private static final class ScriptedSocket
            extends Socket
    {
        private final InputStream in;
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        ScriptedSocket(byte[] received)
        {
            this.in = new ByteArrayInputStream(received);
        }

        @Override
        public InputStream getInputStream()
        {
            return in;
        }

        @Override
        public OutputStream getOutputStream()
        {
            return out;
        }

        @Override
        public void setSoTimeout(int timeout) {}
    }

    @FuzzTest(maxExecutions = 20_000)
    void responderCompletesOrRefuses(byte[] received)
    {
        try {
            Session session = ClusterHandshake.respond(new ScriptedSocket(received), SECRET, "control", ClusterRole.DECODE, ClusterRole.PREFILL, TIMEOUT);
            assertThat(session).isNotNull();
        }
        catch (AuthenticationException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
        catch (IOException e) {
            throw new AssertionError("the responder failed with " + e + " instead of an AuthenticationException", e);
        }
    }

    @FuzzTest(maxExecutions = 20_000)
    void initiatorCompletesOrRefuses(byte[] received)
    {
        try {
            Session session = ClusterHandshake.initiate(new ScriptedSocket(received), SECRET, "control", ClusterRole.PREFILL, ClusterRole.DECODE, TIMEOUT);
            assertThat(session).isNotNull();
        }
        catch (AuthenticationException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
        catch (IOException e) {
            throw new AssertionError("the initiator failed with " + e + " instead of an AuthenticationException", e);
        }
    }

    @FuzzTest(maxExecutions = 20_000)
    void peerTextCannotBreakALine(FuzzedDataProvider data)
    {
        int maxChars = data.consumeInt(0, 300);
        String text = data.consumeRemainingAsString();
        String clean = PeerText.clean(text, maxChars);
        String printable = PeerText.printable(text);
        assertThat(printable).hasSameSizeAs(text);
        for (String out : new String[] {clean, printable}) {
            out.chars().forEach(c -> assertThat(breaksLines((char) c)).as("char %04x in %s", c, out).isFalse());
        }
        // clipped to maxChars, plus at most one escape that started below it and the "...(N chars)" note
        assertThat(clean.length()).isLessThanOrEqualTo(maxChars + 5 + "...( chars)".length() + 10);
    }

    private static boolean breaksLines(char c)
    {
        return Character.isISOControl(c) || c == '\u2028' || c == '\u2029' || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069');
    }
}
