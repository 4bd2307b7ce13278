package io.handoff.status;

import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.MembershipView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A router's {@code GET /backends} is read like any answer from the network: every entry must be a valid member. */
class RouterBackendsTest
{
    private static final URI ROUTER = URI.create("http://127.0.0.1:8000/backends");

    @Test
    void eachEntryIsAMemberWithItsIdIncarnationAndDraining()
            throws IOException
    {
        MembershipView view = parse("""
                [{"id": "prefill-0", "url": "http://10.0.0.5:30000", "role": "prefill", "incarnation": "abc123", "draining": true, "healthy": true},
                 {"url": "http://10.0.0.6:30000/", "role": "decode", "incarnation": null, "draining": "yes"}]""");

        assertThat(view.members()).containsExactly(
                new Member("prefill-0", MemberRole.PREFILL, "abc123", URI.create("http://10.0.0.5:30000"), "", 0, true),
                new Member("http://10.0.0.6:30000", MemberRole.DECODE, "", URI.create("http://10.0.0.6:30000"), "", 0, false));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "<html>                                                   | did not answer JSON; is it a handoff router?",
            "{\"url\": \"http://h:1\"}                                  | did not answer a JSON array of servers",
            "[{\"url\": \"http://h:1\"}]                                | entry 0 has no \"url\" string or no \"role\" prefill or decode",
            "[{\"url\": \"http://h:1\", \"role\": \"router\"}]          | entry 0 has no \"url\" string or no \"role\" prefill or decode",
            "[{\"url\": \"file:///etc/passwd\", \"role\": \"decode\"}]   | entry 0: 'file:///etc/passwd' is not an http:// or https:// URL",
            "[{\"url\": \"http://h:1?x=1\", \"role\": \"decode\"}]       | entry 0: 'http://h:1?x=1' must be just a server's address",
            "[{\"id\": \"-x\", \"url\": \"http://h:1\", \"role\": \"decode\"}] | entry 0: member id '-x' is not 1 to 253",
            "[{\"url\": \"http://h:1\", \"role\": \"decode\"}, {\"url\": \"http://h:1\", \"role\": \"prefill\"}] | lists http://h:1 (http://h:1) more than once"})
    void anAnswerThatIsNotAListOfServersIsRefusedSayingWhy(String body, String why)
    {
        assertThatThrownBy(() -> parse(body)).isInstanceOf(IOException.class).hasMessageStartingWith("GET " + ROUTER).hasMessageContaining(why);
    }

    @Test
    void aFieldWithControlCharactersIsTakenAsAbsent()
            throws IOException
    {
        // an id that would move a terminal's cursor is no id: the URL names the member instead
        MembershipView view = parse("[{\"id\": \"a\\u001b[2J\", \"url\": \"http://h:1\", \"role\": \"decode\"}]");
        assertThat(view.members().getFirst().id()).isEqualTo("http://h:1");
        assertThat(Untrusted.excerpt("bad\u001b[2Jtext\n".getBytes(StandardCharsets.UTF_8))).isEqualTo("bad?[2Jtext");
    }

    private static MembershipView parse(String body)
            throws IOException
    {
        return RouterBackends.parse(ROUTER, body.getBytes(StandardCharsets.UTF_8));
    }
}
