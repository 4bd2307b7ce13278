package io.handoff.core.scheduler;

import io.handoff.core.model.ByteTokenizer;
import io.handoff.core.model.Sampler;
import io.handoff.core.model.SamplingParams;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** How requests end: max_new_tokens, stop ids, EOS unless ignored. */
class SchedulerFinishTest
{
    private static final String MODEL = "tiny-gqa";
    // found by search: this prompt and seed sample EOS as output 4 (at a temperature that makes EOS likely)
    private static final int[] EOS_PROMPT = prompt(8, 13);
    private static final SamplingParams EOS_SAMPLING = new SamplingParams(3f, 1f, 13);
    private static final int EOS_INDEX = 4;

    @Test
    void maxNewTokensEndsWithLengthAndExactlyThatManyTokens()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).build()) {
            List<Integer> streamed = new ArrayList<>();
            RequestHandle handle = fixture.scheduler.submit(greedy("a", prompt(12, 1), 7), (index, token) -> {
                assertThat(index).isEqualTo(streamed.size());
                streamed.add(token);
            });
            GenerateResult result = SchedulerFixture.await(handle);
            assertThat(result.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(result.outputIds()).hasSize(7);
            assertThat(result.promptTokens()).isEqualTo(12);
            assertThat(streamed).containsExactly(Arrays.stream(result.outputIds()).boxed().toArray(Integer[]::new));

            GenerateResult one = fixture.run(greedy("b", prompt(12, 2), 1));
            assertThat(one.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(one.outputIds()).hasSize(1);
            assertThat(fixture.run(GenerateRequest.greedy("c", prompt(12, 3), 3)).logits()).isEmpty();
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void stopTokenEndsTheRequestWithStopAfterEmittingIt(boolean overlap)
    {
        int[] prompt = prompt(20, 11);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            int[] free = fixture.run(greedy("free", prompt, 12)).outputIds();
            // the first output, after output 0, whose token did not occur before it
            int stopAt = 1;
            while (contains(Arrays.copyOf(free, stopAt), free[stopAt])) {
                stopAt++;
            }
            int stopId = free[stopAt];
            GenerateRequest stopping = new GenerateRequest("stopping", prompt, 12, SamplingParams.GREEDY, Set.of(stopId, 300), true, true);
            GenerateResult result = fixture.run(stopping);

            assertThat(result.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(result.outputIds()).isEqualTo(Arrays.copyOf(free, stopAt + 1));
            // in overlap mode one more decode was already scheduled; its sample is not part of the result
            assertThat(result.logits()).hasSize(stopAt + 1);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void failingTokenListenerAbortsItsRequestOnly(boolean overlap)
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).build()) {
            RequestHandle failing = fixture.scheduler.submit(greedy("failing", prompt(12, 4), 10), (index, token) -> {
                if (index == 2) {
                    throw new IllegalStateException("client went away");
                }
            });
            RequestHandle healthy = fixture.submit(greedy("healthy", prompt(14, 5), 10));
            GenerateResult aborted = SchedulerFixture.await(failing);
            assertThat(aborted.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(aborted.error()).hasValue("its token listener failed: java.lang.IllegalStateException: client went away");
            assertThat(aborted.outputIds()).hasSize(3);
            assertThat(SchedulerFixture.await(healthy).finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void eosEndsTheRequestUnlessIgnored()
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).build()) {
            GenerateResult stopped = fixture.run(new GenerateRequest("eos", EOS_PROMPT, 24, EOS_SAMPLING, Set.of(), false, false));
            GenerateResult ignored = fixture.run(new GenerateRequest("ignore-eos", EOS_PROMPT, 24, EOS_SAMPLING, Set.of(), true, false));

            assertThat(stopped.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(stopped.outputIds()).hasSize(EOS_INDEX + 1).endsWith(ByteTokenizer.EOS);
            assertThat(ignored.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(ignored.outputIds()).hasSize(24).startsWith(stopped.outputIds());
            fixture.assertIdleAndAccountedFor();
        }
    }

    @ParameterizedTest(name = "overlap {0}")
    @ValueSource(booleans = {false, true})
    void minNewTokensSuppressesEosAndStopIdsUntilReached(boolean overlap)
    {
        int[] prompt = prompt(10, 17);
        // a model that makes EOS the greedy choice at every position
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).overlap(overlap).favour(ByteTokenizer.EOS).build()) {
            GenerateResult eager = fixture.run(new GenerateRequest("eager", prompt, 12, SamplingParams.GREEDY, Set.of(), false, false));
            assertThat(eager.outputIds()).containsExactly(ByteTokenizer.EOS);
            assertThat(eager.finishReason()).isEqualTo(FinishReason.STOP);
            // held back once: the best other token, then EOS
            int[] once = fixture.run(new GenerateRequest("once", prompt, 12, atLeast(1), Set.of(), false, false)).outputIds();
            assertThat(once).hasSize(2).endsWith(ByteTokenizer.EOS);
            int stopId = once[0];

            GenerateResult held = fixture.run(new GenerateRequest("held", prompt, 12, atLeast(5), Set.of(stopId), false, true));
            assertThat(held.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(held.outputIds()).hasSize(6).endsWith(ByteTokenizer.EOS);
            for (int i = 0; i < 5; i++) {
                // exactly the greedy choice once EOS and the stop id are out of the running
                float[] logits = held.logits().get(i).clone();
                logits[ByteTokenizer.EOS] = Float.NEGATIVE_INFINITY;
                logits[stopId] = Float.NEGATIVE_INFINITY;
                assertThat(held.outputIds()[i]).as("output %d", i).isEqualTo(Sampler.argmax(logits)).isNotEqualTo(stopId);
            }
            // an ignored EOS ends nothing, so nothing holds it back: only the stop id is suppressed
            GenerateResult ignoring = fixture.run(new GenerateRequest("ignoring", prompt, 4, atLeast(3), Set.of(stopId), true, false));
            assertThat(ignoring.outputIds()).containsExactly(ByteTokenizer.EOS, ByteTokenizer.EOS, ByteTokenizer.EOS, ByteTokenizer.EOS);
            assertThat(ignoring.finishReason()).isEqualTo(FinishReason.LENGTH);
            fixture.assertIdleAndAccountedFor();
        }
    }

    @Test
    void sampledOutputDependsOnlyOnTheSeed()
    {
        GenerateRequest request = new GenerateRequest("sampled", prompt(16, 5), 10, new SamplingParams(1f, 0.95f, 1234), Set.of(), true, false);
        try (SchedulerFixture fixture = SchedulerFixture.builder(MODEL).build()) {
            GenerateResult first = fixture.run(request);
            GenerateResult again = fixture.run(new GenerateRequest("sampled-again", request.promptIds(), 10, request.sampling(), Set.of(), true, false));
            GenerateResult greedy = fixture.run(GenerateRequest.greedy("greedy", request.promptIds(), 10));
            assertThat(again.outputIds()).isEqualTo(first.outputIds());
            assertThat(greedy.outputIds()).isNotEqualTo(first.outputIds());
        }
    }

    private static SamplingParams atLeast(int minNewTokens)
    {
        return new SamplingParams(0f, 1f, -1, 0f, 1f, 0f, 0f, minNewTokens, 0);
    }

    private static boolean contains(int[] values, int value)
    {
        return Arrays.stream(values).anyMatch(v -> v == value);
    }
}
