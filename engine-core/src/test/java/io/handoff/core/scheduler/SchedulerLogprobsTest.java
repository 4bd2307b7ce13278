package io.handoff.core.scheduler;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.Transformer;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import static io.handoff.core.scheduler.SchedulerFixture.concat;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.logitBits;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Log probabilities are of the raw logits the scheduler sampled from, and of the prompt given what comes before. */
class SchedulerLogprobsTest
{
    /**
     * The logits at every prompt position, from one forward over the whole prompt outside the scheduler: what the prompt's
     * log probabilities must equal whatever chunks and cached prefix the scheduler used.
     */
    private static float[][] allPositions(String modelName, int[] prompt)
    {
        Transformer model = SchedulerFixture.model(modelName);
        ModelConfig config = model.config();
        try (KvPool kv = KvPool.allocate(KvGeometry.of(config.attentionGeometry(), config.layers(), KvDtype.F32, 16), Math.ceilDiv(prompt.length, 16))) {
            ReferenceAttention attention = new ReferenceAttention(config.attentionGeometry(), kv.view());
            int[] slots = IntStream.range(0, prompt.length).toArray();
            ForwardBatch batch = ForwardBatch.builder().extend(prompt, 0, slots).build(attention::numKvSplits);
            return model.forwardAllPositions(batch, kv.view(), attention, Transformer.LayerHook.NONE);
        }
    }

    /** What the scheduler must report for prompt positions {@code from ..}, computed from {@link #allPositions}. */
    private static List<TokenLogprob> expectedInput(float[][] all, int[] prompt, int from, int topN)
    {
        List<TokenLogprob> expected = new ArrayList<>();
        for (int j = from; j < prompt.length; j++) {
            expected.add(TokenLogprobs.of(all[j - 1], prompt[j], topN));
        }
        return expected;
    }

    @Test
    void greedyChoosesTheMostLikelyTokenAndEachOutputGetsTheLogprobOfItsRawLogits()
    {
        List<TokenLogprob> heard = new ArrayList<>();
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").build()) {
            GenerateRequest request = greedy("r", prompt(40, 1), 6).withLogprobs(new LogprobRequest(5, -1));
            GenerateResult result = SchedulerFixture.await(fixture.scheduler.submit(request, new TokenListener()
            {
                @Override
                public void onToken(int index, int tokenId)
                {
                    throw new AssertionError("the scheduler calls the listener with the log probability");
                }

                @Override
                public void onToken(int index, int tokenId, TokenLogprob logprob)
                {
                    assertThat(logprob.tokenId()).isEqualTo(tokenId);
                    heard.add(logprob);
                }
            }));
            Logprobs logprobs = result.logprobs();
            assertThat(logprobs.output()).hasSize(result.outputIds().length).isEqualTo(heard);
            assertThat(logprobs.input()).isEmpty();
            assertThat(logprobs.inputFrom()).isEqualTo(40);
            for (int k = 0; k < result.outputIds().length; k++) {
                TokenLogprob entry = logprobs.output().get(k);
                assertThat(entry.tokenId()).isEqualTo(result.outputIds()[k]);
                assertThat(entry.topIds()).hasSize(5);
                assertThat(entry.topIds()[0]).as("greedy picks the most likely").isEqualTo(entry.tokenId());
                assertThat(entry.topLogprobs()[0]).isEqualTo(entry.logprob());
                assertThat(entry).isEqualTo(TokenLogprobs.of(result.logits().get(k), entry.tokenId(), 5));
                float[] row = result.logits().get(k);
                double total = 0;
                for (int id = 0; id < row.length; id++) {
                    total += Math.exp(TokenLogprobs.of(row, id, 0).logprob());
                }
                assertThat(total).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5));
            }
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "{0}, chunk {1}, overlap {2}, from {3}")
    @CsvSource({
            "tiny-gqa, 4096, false, 0",
            "tiny-gqa, 32, true, 0",
            "tiny-mla, 32, true, 21",
            "tiny-mla, 16, false, 69"})
    void promptLogprobsEqualAForwardOverTheWholePromptWhateverTheChunks(String model, int chunk, boolean overlap, int start)
    {
        int[] prompt = prompt(70, 2);
        float[][] all = allPositions(model, prompt);
        try (SchedulerFixture fixture = SchedulerFixture.builder(model).chunk(chunk).overlap(overlap).build()) {
            List<Object> heard = new ArrayList<>();
            GenerateResult result = SchedulerFixture.await(fixture.scheduler.submit(greedy("r", prompt, 3).withLogprobs(new LogprobRequest(3, start)),
                    new TokenListener()
                    {
                        @Override
                        public void onToken(int index, int tokenId)
                        {
                            heard.add(tokenId);
                        }

                        @Override
                        public void onPrompt(Logprobs prompt)
                        {
                            heard.add(prompt);
                        }
                    }));
            Logprobs logprobs = result.logprobs();
            int from = Math.max(1, start);
            assertThat(logprobs.inputFrom()).isEqualTo(from);
            assertThat(logprobs.input()).isEqualTo(expectedInput(all, prompt, from, 3));
            // the prompt's, once, before the first token: what a stream shows from its first chunk
            assertThat(heard).hasSize(1 + result.outputIds().length)
                    .first().isEqualTo(new Logprobs(from, logprobs.input(), List.of()));
            // the last prompt position's logits are the first output token's
            assertThat(logprobs.output().getFirst()).isEqualTo(TokenLogprobs.of(all[prompt.length - 1], result.outputIds()[0], 3));
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void askingForPromptLogprobsLeavesEveryRequestsOutputAndLogitsTheSameBits()
    {
        int[] prompt = prompt(90, 3);
        int[] other = prompt(50, 4);
        List<GenerateResult> plain;
        List<GenerateResult> withLogprobs;
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-mla").chunk(48).chunkCache().build()) {
            plain = fixture.runAll(List.of(greedy("a", prompt, 5), greedy("b", other, 5)));
            withLogprobs = fixture.runAll(List.of(greedy("a", prompt, 5).withLogprobs(new LogprobRequest(4, 0)), greedy("b", other, 5)));
            fixture.assertIdleAndAccountedFor();
        }
        for (int i = 0; i < 2; i++) {
            assertThat(withLogprobs.get(i).outputIds()).isEqualTo(plain.get(i).outputIds());
            assertThat(logitBits(withLogprobs.get(i))).isDeepEqualTo(logitBits(plain.get(i)));
        }
        assertThat(withLogprobs.get(0).logprobs().input()).hasSize(89);
        assertThat(withLogprobs.get(1).logprobs()).isEqualTo(Logprobs.NONE);
    }

    @Test
    void cachedPrefixIsReusedOnlyBeforeThePositionsWhoseLogitsTheRequestNeeds()
    {
        int[] prompt = concat(prompt(64, 5), prompt(6, 6));
        float[][] all = allPositions("tiny-gqa", prompt);
        try (SchedulerFixture fixture = SchedulerFixture.builder("tiny-gqa").pageSize(16).build()) {
            assertThat(fixture.run(greedy("warm", prompt, 2)).cachedTokens()).isZero();
            GenerateResult fromZero = fixture.run(greedy("zero", prompt, 2).withLogprobs(new LogprobRequest(2, 0)));
            assertThat(fromZero.cachedTokens()).isZero();
            assertThat(fromZero.logprobs().input()).isEqualTo(expectedInput(all, prompt, 1, 2));
            GenerateResult fromForty = fixture.run(greedy("forty", prompt, 2).withLogprobs(new LogprobRequest(2, 40)));
            // position 39's logits give token 40's: at most 39 cached tokens, cut down to whole pages
            assertThat(fromForty.cachedTokens()).isEqualTo(32);
            assertThat(fromForty.logprobs().input()).isEqualTo(expectedInput(all, prompt, 40, 2));
            assertThat(fromForty.outputIds()).isEqualTo(fromZero.outputIds());
            GenerateResult outputOnly = fixture.run(greedy("output", prompt, 2).withLogprobs(new LogprobRequest(2, -1)));
            assertThat(outputOnly.cachedTokens()).isEqualTo(64);
            assertThat(outputOnly.logprobs().output()).isEqualTo(fromZero.logprobs().output());
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void logprobStartOutsideThePromptIsRefused()
    {
        assertThatThrownBy(() -> greedy("r", new int[] {1, 2, 3}, 2).withLogprobs(new LogprobRequest(0, 3)))
                .isInstanceOf(RequestRejectedException.class).hasMessageContaining("logprob start 3");
        assertThat(greedy("r", new int[] {1, 2, 3}, 2).withLogprobs(new LogprobRequest(0, 2)).logprobs()).contains(new LogprobRequest(0, 2));
    }
}
