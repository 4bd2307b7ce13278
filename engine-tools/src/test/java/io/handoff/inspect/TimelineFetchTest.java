package io.handoff.inspect;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What handoff inspect says for each answer a node can give to GET /debug/requests/{rid}. */
class TimelineFetchTest
{
    private final TimelineFetch fetch = new TimelineFetch(HttpClient.newHttpClient(), new ObjectMapper(), Optional.empty(), Duration.ofSeconds(1));

    @Test
    void aTimelineIsRead()
    {
        NodeTimeline timeline = fetch.read("http://p:1", "r1", 200, """
                {"role":"prefill","host":"h","pid":7,"rid":"r1","start_epoch_us":100,"ended":true,"dropped":2,
                 "entries":[{"event":"queued","epoch_us":100,"offset_us":0,"detail":"prompt_tokens=3"}]}""");

        assertThat(timeline.role()).isEqualTo("prefill");
        assertThat(timeline.dropped()).isEqualTo(2);
        assertThat(timeline.entries()).containsExactly(new NodeTimeline.Entry("queued", 100, 0, "prompt_tokens=3"));
    }

    @Test
    void anUnknownRidSaysSoInTheNodesWords()
    {
        assertThatThrownBy(() -> fetch.read("http://p:1", "r1", 404,
                "{\"error\":{\"code\":\"unknown_rid\",\"message\":\"this prefill has no timeline for rid 'r1'\"}}"))
                .isInstanceOf(IllegalStateException.class).hasMessage("http://p:1: this prefill has no timeline for rid 'r1'");
    }

    @Test
    void aMissingEndpointMeansDebugEndpointsAreOffAndSaysHowToTurnThemOn()
    {
        assertThatThrownBy(() -> fetch.read("http://p:1", "r1", 404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no endpoint\"}}"))
                .hasMessageContaining("its debug endpoints are off").hasMessageContaining("handoff.server.debug-endpoints = on");
    }

    @Test
    void aRefusedKeySaysWhichOptionToUse()
    {
        assertThatThrownBy(() -> fetch.read("http://p:1", "r1", 401, "{\"error\":{\"code\":\"missing_api_key\",\"message\":\"send the header\"}}"))
                .hasMessageContaining("needs an API key").hasMessageContaining("--api-key").hasMessageContaining("HANDOFF_API_KEY");
    }

    @Test
    void aBodyThatIsNoTimelineNamesTheMissingField()
    {
        assertThatThrownBy(() -> fetch.read("http://p:1", "r1", 200, "{\"role\":\"prefill\"}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a request timeline");
        assertThatThrownBy(() -> fetch.read("http://p:1", "r1", 200, """
                {"role":"prefill","rid":"other","start_epoch_us":1,"entries":[]}"""))
                .hasMessageContaining("rid 'other', not 'r1'");
    }
}
