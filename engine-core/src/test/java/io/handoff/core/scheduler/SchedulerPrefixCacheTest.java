package io.handoff.core.scheduler;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static io.handoff.core.scheduler.SchedulerFixture.concat;
import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.logitBits;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;

/** Prefix reuse changes where KV comes from, never what a request computes. */
class SchedulerPrefixCacheTest
{
    @ParameterizedTest(name = "{0}, page size {1}, chunk {2}, overlap {3}")
    @CsvSource({
            "tiny-gqa, 16, 4096, false",
            "tiny-gqa, 1, 4096, false",
            "tiny-mla, 16, 32, true",
            "tiny-mla, 1, 4096, false"})
    void laterRequestReusesTheSharedPageAlignedPrefixAndComputesTheSameAsWithoutReuse(String model, int pageSize, int chunk, boolean overlap)
    {
        int[] shared = prompt(70, 1);
        int[] first = concat(shared, prompt(10, 2));
        int[] second = concat(shared, prompt(12, 3));
        GenerateResult reusing;
        GenerateResult repeated;
        try (SchedulerFixture fixture = SchedulerFixture.builder(model).pageSize(pageSize).pages(2048 / pageSize).chunk(chunk).overlap(overlap).build()) {
            GenerateResult firstResult = fixture.run(greedy("first", first, 4));
            assertThat(firstResult.cachedTokens()).isZero();
            reusing = fixture.run(greedy("second", second, 4));
            repeated = fixture.run(greedy("first-again", first, 4));
            assertThat(repeated.outputIds()).isEqualTo(firstResult.outputIds());
            assertThat(logitBits(repeated)).isDeepEqualTo(logitBits(firstResult));
            assertThat(fixture.scheduler.stats().cachedPromptTokens()).isEqualTo(reusing.cachedTokens() + repeated.cachedTokens());
            fixture.assertIdleAndAccountedFor();
        }
        // the 70 shared tokens, cut down to whole pages
        assertThat(reusing.cachedTokens()).isEqualTo(70 / pageSize * pageSize).isPositive();
        // the whole prompt but its last token, cut down to whole pages: the last token's logits give output 0
        assertThat(repeated.cachedTokens()).isEqualTo((first.length - 1) / pageSize * pageSize);

        try (SchedulerFixture noReuse = SchedulerFixture.builder(model).pageSize(pageSize).pages(2048 / pageSize).chunkCache().build()) {
            GenerateResult computed = noReuse.run(greedy("second", second, 4));
            assertThat(computed.cachedTokens()).isZero();
            assertThat(reusing.outputIds()).isEqualTo(computed.outputIds());
            assertThat(logitBits(reusing)).isDeepEqualTo(logitBits(computed));
            noReuse.assertIdleAndAccountedFor();
            assertThat(noReuse.scheduler.stats().cachedPages()).isZero();
        }
    }
}
