package io.handoff.router.prefix;

import io.handoff.router.RouterFixture;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class RouteKeysTest
{
    private final RouteKeys keys = new RouteKeys(8);

    private RouteKey of(String path, String body)
    {
        return keys.of(path, RouterFixture.json(body));
    }

    private static int[] text(String text)
    {
        return java.util.stream.IntStream.concat(java.util.stream.IntStream.of(RouteKey.TEXT), text.chars()).toArray();
    }

    @Test
    void generateTextIsKeyedByItsFirstCharsAndCountedWhole()
    {
        RouteKey key = of("/generate", "{\"text\": \"Hello there, world\", \"sampling_params\": {\"max_new_tokens\": 20}}");
        assertThat(key.symbols()).isEqualTo(text("Hello th"));
        assertThat(key.promptLength()).isEqualTo(18);
        assertThat(key.maxNewTokens()).isEqualTo(20);
        // (18 + 20) / 16 rounded up, per generation
        assertThat(key.pages(16, 1)).isEqualTo(3);
        assertThat(key.pages(16, 4)).isEqualTo(12);
    }

    @Test
    void inputIdsAndTokenPromptsAreKeyedByIdsNeverSharingAPrefixWithText()
    {
        RouteKey ids = of("/generate", "{\"input_ids\": [72, 101, 108]}");
        assertThat(ids.symbols()).containsExactly(RouteKey.IDS, 72, 101, 108);
        assertThat(ids.maxNewTokens()).isEqualTo(RouteKey.DEFAULT_MAX_NEW_TOKENS);
        assertThat(of("/v1/completions", "{\"prompt\": [[5, 6], [7]], \"max_tokens\": 3}").symbols()).containsExactly(RouteKey.IDS, 5, 6);
        assertThat(of("/v1/completions", "{\"prompt\": [\"first\", \"second\"]}").symbols()).isEqualTo(text("first"));
        assertThat(of("/generate", "{\"text\": \"Hel\"}").symbols()[0]).isNotEqualTo(ids.symbols()[0]);
    }

    @Test
    void chatMessagesAreJoinedWithTheirRoles()
    {
        RouteKey key = new RouteKeys(100).of("/v1/chat/completions", RouterFixture.json(
                "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi\"}]}],"
                        + " \"max_completion_tokens\": 7}"));
        assertThat(key.symbols()).isEqualTo(text("system: Be brief.\nuser: Hi\n"));
        assertThat(key.maxNewTokens()).isEqualTo(7);
    }

    @Test
    void responsesInputFollowsItsInstructions()
    {
        RouteKey key = new RouteKeys(100).of("/v1/responses", RouterFixture.json("{\"instructions\": \"Be brief.\", \"input\": \"Hi\", \"max_output_tokens\": 9}"));
        assertThat(key.symbols()).isEqualTo(text("Be brief.\nHi"));
        assertThat(key.maxNewTokens()).isEqualTo(9);
    }

    @Test
    void aPromptOfTheWrongShapeHasNoKeyAndTheServerRefusesIt()
    {
        assertThat(of("/generate", "{\"text\": 5}")).isEqualTo(RouteKey.NONE);
        assertThat(of("/generate", "{\"input_ids\": [1, -2]}")).isEqualTo(RouteKey.NONE);
        assertThat(of("/generate", "{\"input_ids\": [1, \"x\"]}")).isEqualTo(RouteKey.NONE);
        assertThat(of("/v1/chat/completions", "{\"messages\": \"hi\"}")).isEqualTo(RouteKey.NONE);
        assertThat(of("/generate", "{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": -1}}").maxNewTokens()).isEqualTo(RouteKey.DEFAULT_MAX_NEW_TOKENS);
    }
}
