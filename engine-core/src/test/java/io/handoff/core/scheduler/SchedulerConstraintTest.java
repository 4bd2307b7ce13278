package io.handoff.core.scheduler;

import io.handoff.core.grammar.Grammar;
import io.handoff.core.grammar.JsonSchemaGrammar;
import io.handoff.core.grammar.RegexGrammar;
import io.handoff.core.grammar.TokenGrammar;
import io.handoff.core.grammar.TokenVocabulary;
import io.handoff.core.json.Json;
import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.SamplingParams;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** Requests with a grammar: every token is one the grammar allows, and the output ends (with EOS) where the grammar does. */
class SchedulerConstraintTest
{
    private static final String MODEL = "tiny-gqa";
    private static final ByteTokenizer TOKENIZER = new ByteTokenizer();

    private static TokenGrammar bound(Grammar grammar)
    {
        int rows = SchedulerFixture.model(MODEL).config().vocabSize();
        return new TokenGrammar(grammar, TokenVocabulary.of(TOKENIZER, rows));
    }

    private static String text(GenerateResult result)
    {
        int[] ids = result.outputIds();
        int end = ids.length > 0 && ids[ids.length - 1] == ByteTokenizer.EOS ? ids.length - 1 : ids.length;
        return TOKENIZER.decode(Arrays.copyOf(ids, end));
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void sampledOutputsMatchTheRegexAndEndWithEosWhereItEnds(boolean overlap)
    {
        TokenGrammar grammar = bound(RegexGrammar.fullMatch("(yes|no), [0-9]{3}\\."));
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            List<String> outputs = new ArrayList<>();
            for (int seed = 0; seed < 6; seed++) {
                GenerateRequest request = new GenerateRequest("r" + seed, prompt(10, seed), 32, new SamplingParams(1f, 1f, seed), Set.of(), false, false)
                        .withConstraint(grammar);
                GenerateResult result = fixture.run(request);
                assertThat(result.finishReason()).isEqualTo(FinishReason.STOP);
                assertThat(result.outputIds()[result.outputIds().length - 1]).isEqualTo(ByteTokenizer.EOS);
                assertThat(text(result)).matches("(yes|no), [0-9]{3}\\.");
                outputs.add(text(result));
            }
            assertThat(Set.copyOf(outputs)).as("different seeds sample different matches").hasSizeGreaterThan(1);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void aSchemaEndsItsOutputEvenWhenEosIsIgnoredAndTheSameSeedGivesTheSameOutputInABatch(boolean overlap)
    {
        TokenGrammar grammar = bound(JsonSchemaGrammar.compile(Json.parse("""
                {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
                 "required": ["ok", "n"], "additionalProperties": false}""", "test"), "test"));
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            GenerateRequest alone = new GenerateRequest("alone", prompt(12, 3), 64, new SamplingParams(0.8f, 1f, 42), Set.of(), true, false)
                    .withConstraint(grammar);
            GenerateResult first = fixture.run(alone);
            assertThat(first.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(text(first)).matches("\\{\\s*\"ok\"\\s*:\\s*(true|false)\\s*,\\s*\"n\"\\s*:\\s*[0-9]{1,2}\\s*}");
            // the same request among others (unconstrained ones too) samples the same tokens
            List<RequestHandle> handles = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                handles.add(fixture.scheduler.submit(SchedulerFixture.greedy("other" + i, prompt(9, 50 + i), 20), (index, token) -> {}));
            }
            RequestHandle again = fixture.scheduler.submit(new GenerateRequest("again", prompt(12, 3), 64, new SamplingParams(0.8f, 1f, 42), Set.of(),
                    true, false).withConstraint(grammar), (index, token) -> {});
            assertThat(SchedulerFixture.await(again).outputIds()).isEqualTo(first.outputIds());
            handles.forEach(SchedulerFixture::await);
            fixture.assertIdleAndAccountedFor();
        }
    }
}
