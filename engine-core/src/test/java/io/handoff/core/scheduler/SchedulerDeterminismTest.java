package io.handoff.core.scheduler;

import io.handoff.core.model.SamplingParams;
import io.handoff.spi.attention.KvDtype;
import io.handoff.trace.FinishReason;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.logitBits;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The accuracy gate of the whole engine: a request's tokens and logits do not depend on what it was
 * batched with, how its prompt was chunked, whether steps overlap, or the page size. Compared to the bit.
 */
class SchedulerDeterminismTest
{
    private static final int BATCH = 32;
    private static final int TARGET_INDEX = 13;

    static Stream<Arguments> layouts()
    {
        return Stream.of(
                Arguments.of("tiny-mla", 1, KvDtype.F32),
                Arguments.of("tiny-mla", 16, KvDtype.F32),
                Arguments.of("tiny-gqa", 1, KvDtype.F32),
                Arguments.of("tiny-gqa", 16, KvDtype.F32),
                Arguments.of("tiny-mla", 16, KvDtype.BF16));
    }

    /** 32 requests of mixed prompt lengths (5..96) and output lengths (2..8); the target sits among them. */
    private static List<GenerateRequest> batchAround(GenerateRequest target)
    {
        List<GenerateRequest> batch = new ArrayList<>();
        for (int i = 0; i < BATCH; i++) {
            batch.add(i == TARGET_INDEX ? target : greedy("mate-" + i, prompt(5 + (i * 29) % 92, 1000 + i), 2 + i % 7));
        }
        return batch;
    }

    @ParameterizedTest(name = "{0}, page size {1}, {2}")
    @MethodSource("layouts")
    void requestGivesBitIdenticalTokensAndLogitsAloneBatchedChunkedAndOverlapped(String model, int pageSize, KvDtype dtype)
    {
        // 100 tokens: chunked-prefill-size 64 splits it even when it runs alone
        GenerateRequest target = greedy("target", prompt(100, 7), 6);
        GenerateResult reference = run(model, pageSize, dtype, 4096, false, List.of(target)).getFirst();
        assertThat(reference.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(reference.outputIds()).hasSize(6);
        assertThat(reference.logits()).hasSize(6);

        record Variant(int chunk, boolean overlap, boolean batched) {}
        List<List<GenerateResult>> batches = new ArrayList<>();
        for (Variant variant : List.of(new Variant(64, false, false), new Variant(64, true, false), new Variant(4096, true, false),
                new Variant(64, true, true), new Variant(4096, false, true))) {
            List<GenerateResult> results = run(model, pageSize, dtype, variant.chunk(), variant.overlap(),
                    variant.batched() ? batchAround(target) : List.of(target));
            GenerateResult result = results.get(variant.batched() ? TARGET_INDEX : 0);
            assertThat(result.outputIds()).as("tokens, %s", variant).isEqualTo(reference.outputIds());
            assertThat(logitBits(result)).as("logit bits, %s", variant).isDeepEqualTo(logitBits(reference));
            if (variant.batched()) {
                batches.add(results);
            }
        }
        // every member of the batch, not only the target, is the same under both batched schedules
        for (int i = 0; i < BATCH; i++) {
            GenerateResult first = batches.get(0).get(i);
            GenerateResult second = batches.get(1).get(i);
            assertThat(first.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(second.outputIds()).as("request %d", i).isEqualTo(first.outputIds());
            assertThat(logitBits(second)).as("request %d", i).isDeepEqualTo(logitBits(first));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void seededSamplingIsTheSameAloneAndBatched(String model)
    {
        GenerateRequest sampled = new GenerateRequest("sampled", prompt(30, 21), 12, new SamplingParams(0.8f, 0.9f, 42), Set.of(), true, true);
        GenerateRequest otherSeed = new GenerateRequest("other-seed", prompt(30, 21), 12, new SamplingParams(0.8f, 0.9f, 43), Set.of(), true, true);
        List<GenerateRequest> batch = new ArrayList<>(List.of(sampled, otherSeed));
        for (int i = 0; i < 6; i++) {
            batch.add(new GenerateRequest("mate-" + i, prompt(10 + 9 * i, 300 + i), 4 + i, new SamplingParams(1.2f, 0.7f, i), Set.of(), true, false));
        }
        GenerateResult alone = run(model, 16, KvDtype.F32, 4096, false, List.of(sampled)).getFirst();
        List<GenerateResult> batched = run(model, 16, KvDtype.F32, 32, true, batch);

        assertThat(batched.getFirst().outputIds()).isEqualTo(alone.outputIds());
        assertThat(logitBits(batched.getFirst())).isDeepEqualTo(logitBits(alone));
        // the seed, not the batch, is the randomness: the same prompt with another seed samples differently
        assertThat(batched.get(1).outputIds()).isNotEqualTo(alone.outputIds());
        assertThat(logitBits(batched.get(1))[0]).isEqualTo(logitBits(alone)[0]);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mla", "tiny-gqa"})
    void everySamplingRuleTogetherIsTheSameAloneAndBatched(String model)
    {
        SamplingParams rules = new SamplingParams(0.8f, 0.9f, 20, 0.05f, 1.1f, 0.2f, 0.1f, 4, 7);
        GenerateRequest sampled = new GenerateRequest("sampled", prompt(30, 21), 12, rules, Set.of(), false, true);
        GenerateRequest plain = new GenerateRequest("plain", prompt(30, 21), 12, new SamplingParams(0.8f, 0.9f, 7), Set.of(), false, true);
        List<GenerateRequest> batch = new ArrayList<>(List.of(sampled, plain));
        for (int i = 0; i < 6; i++) {
            batch.add(new GenerateRequest("mate-" + i, prompt(10 + 9 * i, 300 + i), 4 + i, rules.withSeed(i), Set.of(), true, false));
        }
        GenerateResult alone = run(model, 16, KvDtype.F32, 4096, false, List.of(sampled)).getFirst();
        List<GenerateResult> batched = run(model, 16, KvDtype.F32, 32, true, batch);

        assertThat(batched.getFirst().outputIds()).isEqualTo(alone.outputIds());
        assertThat(logitBits(batched.getFirst())).isDeepEqualTo(logitBits(alone));
        // the rules are what differs: the same seed without them samples other tokens
        assertThat(batched.get(1).outputIds()).isNotEqualTo(alone.outputIds());
    }

    private static List<GenerateResult> run(String model, int pageSize, KvDtype dtype, int chunk, boolean overlap, List<GenerateRequest> requests)
    {
        try (SchedulerFixture fixture = SchedulerFixture.builder(model).pageSize(pageSize).dtype(dtype).pages(4096 / pageSize)
                .maxRunning(BATCH).chunk(chunk).overlap(overlap).build()) {
            List<GenerateResult> results = fixture.runAll(requests);
            fixture.assertIdleAndAccountedFor();
            return results;
        }
    }
}
