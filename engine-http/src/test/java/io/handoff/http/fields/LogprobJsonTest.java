package io.handoff.http.fields;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.output.LogprobOptions;
import io.handoff.core.output.LogprobTrace;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.http.LocalServer;
import io.handoff.http.base.JsonFields;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The log-probability shapes for known values: SGLang's triples, OpenAI completions' four lists and chat's content entries. */
class LogprobJsonTest
{
    /** Token ids are bytes; 200 stands for the two bytes of "é", and 195 for its first byte alone. */
    private static final TokenTexts TEXTS = id -> switch (id) {
        case 200 -> "é".getBytes(StandardCharsets.UTF_8);
        case 195 -> new byte[] {(byte) 0xc3};
        default -> new byte[] {(byte) id};
    };
    private static final int[] PROMPT = {'a', 'b', 'c'};

    private static TokenLogprob at(int id, float logprob, int... alternatives)
    {
        float[] values = new float[alternatives.length];
        for (int k = 0; k < values.length; k++) {
            values[k] = logprob - k;
        }
        return new TokenLogprob(id, logprob, alternatives, values);
    }

    private static LogprobTrace trace(int topN, int promptFrom, boolean text)
    {
        // the engine computes the prompt from the position after the first reported one
        Logprobs computed = new Logprobs(promptFrom + 1, List.of(at('b', -1.5f, 'b', 'x'), at('c', -2.5f, 'c', 'y')).subList(promptFrom, 2),
                List.of());
        return new LogprobTrace(new LogprobOptions(topN, promptFrom, text), PROMPT, computed,
                List.of(at(200, -0.25f, 200, 195), at(195, -3f, 'q', 195)));
    }

    @Test
    void sglangTriplesPadTheFirstPromptPositionWithNullAndCarryTextOnlyWhenAsked()
    {
        ObjectNode meta = JsonFields.MAPPER.createObjectNode();
        LogprobJson.sglang(meta, trace(2, 0, true), new int[] {200, 195}, 2, TEXTS);

        assertThat(reparsed(meta)).isEqualTo(LocalServer.json("""
                {"input_token_logprobs": [[null, 97, "a"], [-1.5, 98, "b"], [-2.5, 99, "c"]],
                 "input_top_logprobs": [null, [[-1.5, 98, "b"], [-2.5, 120, "x"]], [[-2.5, 99, "c"], [-3.5, 121, "y"]]],
                 "output_token_logprobs": [[-0.25, 200, "é"], [-3.0, 195, "\uFFFD"]],
                 "output_top_logprobs": [[[-0.25, 200, "é"], [-1.25, 195, "\uFFFD"]], [[-3.0, 113, "q"], [-4.0, 195, "\uFFFD"]]]}"""));

        ObjectNode plain = JsonFields.MAPPER.createObjectNode();
        LogprobJson.sglang(plain, trace(0, 1, false), new int[] {200, 195}, 1, TEXTS);
        assertThat(reparsed(plain)).isEqualTo(LocalServer.json("""
                {"input_token_logprobs": [[null, 98, null], [-2.5, 99, null]], "output_token_logprobs": [[-0.25, 200, null]]}"""));
    }

    @Test
    void completionsListTheTokensTheirLogprobsTheAlternativesWithTheChosenOneAndTextOffsets()
    {
        JsonNode node = LogprobJson.completions(trace(1, 0, true), new int[] {200, 195}, 0, 2, true, 0, id -> 1, id -> 1, TEXTS);

        assertThat(reparsed(node)).isEqualTo(LocalServer.json("""
                {"tokens": ["a", "b", "c", "é", "\uFFFD"],
                 "token_logprobs": [null, -1.5, -2.5, -0.25, -3.0],
                 "top_logprobs": [null, {"b": -1.5}, {"c": -2.5}, {"é": -0.25}, {"q": -3.0, "\uFFFD": -3.0}],
                 "text_offset": [0, 1, 2, 3, 4]}"""));
    }

    @Test
    void chatEntriesGiveEachTokensBytesSoAPartOfACharacterIsStillKnown()
    {
        JsonNode node = LogprobJson.chat(List.of(at(200, -0.25f, 200, 195), at(195, -3f, 'q', 195)), new int[] {200, 195}, 1, 2, 1, TEXTS);

        assertThat(reparsed(node)).isEqualTo(LocalServer.json("""
                {"content": [{"token": "\uFFFD", "logprob": -3.0, "bytes": [195], "top_logprobs": [{"token": "q", "logprob": -3.0, "bytes": [113]}]}],
                 "refusal": null}"""));
    }

    /** As a client reads it: floats and doubles are both JSON numbers. */
    private static JsonNode reparsed(JsonNode node)
    {
        return LocalServer.json(node.toString());
    }
}
