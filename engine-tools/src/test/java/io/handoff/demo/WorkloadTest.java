package io.handoff.demo;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkloadTest
{
    @Test
    void sameSeedGivesTheSameWorkload()
    {
        assertThat(Workload.fewShot(64, 7)).isEqualTo(Workload.fewShot(64, 7));
        assertThat(Workload.fewShot(64, 7).prompts()).isEqualTo(Workload.fewShot(64, 7).prompts());
    }

    @Test
    void anotherSeedGivesOtherQuestionsAfterTheSamePrefix()
    {
        Workload a = Workload.fewShot(16, 1);
        Workload b = Workload.fewShot(16, 2);
        assertThat(a.sharedPrefix()).isEqualTo(b.sharedPrefix());
        assertThat(a.questions()).isNotEqualTo(b.questions());
    }

    @Test
    void everyPromptStartsWithTheSharedEightShotPrefix()
    {
        Workload workload = Workload.fewShot(32, 0);
        int prefixBytes = workload.sharedPrefix().getBytes(StandardCharsets.UTF_8).length;
        assertThat(prefixBytes).isBetween(1000, 1500);
        assertThat(workload.sharedPrefix().split("Question: ", -1)).hasSize(9);
        assertThat(workload.sharedPrefix().split("Answer: ", -1)).hasSize(9);
        for (int i = 0; i < workload.size(); i++) {
            assertThat(workload.prompt(i))
                    .startsWith(workload.sharedPrefix())
                    .endsWith("Question: " + workload.questions().get(i) + "\nAnswer:");
        }
        assertThat(workload.warmUpPrompt()).startsWith(workload.sharedPrefix());
    }

    @Test
    void questionsAreDistinctAndNoneIsTheWarmUp()
    {
        Workload workload = Workload.fewShot(512, 3);
        assertThat(new HashSet<>(workload.questions())).hasSize(512);
        assertThat(workload.prompts()).doesNotContain(workload.warmUpPrompt()).doesNotHaveDuplicates();
    }

    @Test
    void promptsAreAsciiSoBytesAreTokens()
    {
        // The byte tokenizer makes one token per UTF-8 byte: ASCII keeps prompt length = characters.
        Workload workload = Workload.fewShot(64, 0);
        for (String prompt : workload.prompts()) {
            assertThat(prompt.chars().allMatch(c -> c < 128)).as(prompt).isTrue();
        }
    }

    @Test
    void refusesAnEmptyWorkload()
    {
        assertThatThrownBy(() -> Workload.fewShot(0, 0)).hasMessageContaining("at least 1, got 0");
    }
}
