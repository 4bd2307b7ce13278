package io.handoff.bench.serving;

import io.handoff.core.model.ByteTokenizer;
import io.handoff.demo.Workload;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DatasetTest
{
    @Test
    void theSameSeedGivesTheSameRequestsAndAnotherSeedOthers()
    {
        for (Dataset dataset : Dataset.values()) {
            List<BenchRequest> a = dataset.requests(8, 5, 259, 4096, 16);
            List<BenchRequest> b = dataset.requests(8, 5, 259, 4096, 16);
            List<BenchRequest> c = dataset.requests(8, 6, 259, 4096, 16);
            for (int i = 0; i < 8; i++) {
                assertThat(a.get(i).inputIds()).as(dataset + " " + i).isEqualTo(b.get(i).inputIds());
                assertThat(a.get(i).maxNewTokens()).isEqualTo(b.get(i).maxNewTokens());
            }
            assertThat(Arrays.equals(a.getFirst().inputIds(), c.getFirst().inputIds())).as(dataset.label()).isFalse();
        }
    }

    @Test
    void everyIdIsBelowTheVocabularyAndEveryRequestFitsTheContext()
    {
        for (Dataset dataset : Dataset.values()) {
            for (BenchRequest request : dataset.requests(20, 1, 50, 1024, 64)) {
                assertThat(Arrays.stream(request.inputIds()).allMatch(id -> id >= 0 && id < 50)).as(dataset.label()).isTrue();
                assertThat(request.inputIds().length + request.maxNewTokens()).as(dataset.label()).isLessThanOrEqualTo(1024);
            }
        }
    }

    @Test
    void sharedPrefixRequestsShareTheirFirst1024TokensAndDifferAfter()
    {
        List<BenchRequest> requests = Dataset.SHARED_PREFIX.requests(4, 1, 259, 4096, 32);

        int[] prefix = Arrays.copyOf(requests.getFirst().inputIds(), Dataset.SHARED_PREFIX_TOKENS);
        for (BenchRequest request : requests) {
            assertThat(Arrays.copyOf(request.inputIds(), Dataset.SHARED_PREFIX_TOKENS)).isEqualTo(prefix);
            assertThat(request.inputIds().length).isBetween(Dataset.SHARED_PREFIX_TOKENS + 16, Dataset.SHARED_PREFIX_TOKENS + 64);
            assertThat(request.maxNewTokens()).isEqualTo(32);
        }
        assertThat(requests.get(1).inputIds()).isNotEqualTo(requests.get(2).inputIds());
    }

    @Test
    void mixedAlternatesLongPromptsWithFewTokensAndShortPromptsThatDecodeLong()
    {
        List<BenchRequest> requests = Dataset.MIXED.requests(4, 1, 259, 4096, 64);

        assertThat(requests).extracting(BenchRequest::maxNewTokens).containsExactly(4, 64, 4, 64);
        assertThat(requests.get(0).inputIds().length).isGreaterThanOrEqualTo(Dataset.LONG_PROMPT_TOKENS);
        assertThat(requests.get(1).inputIds().length).isEqualTo(32);
        assertThat(Dataset.LONG_PROMPT.requests(3, 1, 259, 4096, 64)).extracting(BenchRequest::maxNewTokens).containsOnly(4);
    }

    @Test
    void multiTurnSendsEveryConversationsTurnsInOrderEachResendingTheWholeHistory()
    {
        // 3 conversations of 4 turns, turn-major
        List<BenchRequest> requests = Dataset.MULTI_TURN.requests(12, 1, 259, 4096, 32);

        int[] system = Arrays.copyOf(requests.getFirst().inputIds(), Dataset.SYSTEM_PROMPT_TOKENS);
        for (BenchRequest request : requests) {
            assertThat(Arrays.copyOf(request.inputIds(), Dataset.SYSTEM_PROMPT_TOKENS)).as("the shared system prompt").isEqualTo(system);
            assertThat(request.maxNewTokens()).isEqualTo(32);
        }
        for (int turn = 1; turn < 4; turn++) {
            for (int c = 0; c < 3; c++) {
                int[] earlier = requests.get((turn - 1) * 3 + c).inputIds();
                int[] later = requests.get(turn * 3 + c).inputIds();
                assertThat(later.length).isGreaterThan(earlier.length + 32);
                assertThat(Arrays.copyOf(later, earlier.length)).as("turn " + turn + " of conversation " + c + " resends its history").isEqualTo(earlier);
            }
        }
        assertThat(requests.get(3).inputIds()[Dataset.SYSTEM_PROMPT_TOKENS]).as("conversations differ after the system prompt")
                .isNotEqualTo(requests.get(4).inputIds()[Dataset.SYSTEM_PROMPT_TOKENS]);
    }

    @Test
    void withATokenizerSharedPrefixIsTheDemosFewShotTextEncodedAsTheServerWould()
    {
        ByteTokenizer tokenizer = new ByteTokenizer();
        Workload workload = Workload.fewShot(3, 9);

        List<BenchRequest> requests = Dataset.fewShot(tokenizer, 3, 9, 4096, 16);

        for (int i = 0; i < 3; i++) {
            assertThat(requests.get(i).inputIds()).isEqualTo(tokenizer.encodePrompt(workload.prompt(i)));
            assertThat(requests.get(i).maxNewTokens()).isEqualTo(16);
        }
        assertThatThrownBy(() -> Dataset.fewShot(tokenizer, 1, 9, 256, 16)).hasMessageContaining("exceeds the model's context of 256 tokens");
    }

    @Test
    void badValuesSayWhatIsAllowed()
    {
        assertThatThrownBy(() -> Dataset.parse("sharegpt")).hasMessage("--dataset must be one of shared-prefix, random, long-prompt, mixed, multi-turn; was 'sharegpt'");
        assertThatThrownBy(() -> Dataset.RANDOM.requests(0, 1, 259, 4096, 8)).hasMessageContaining("--requests must be at least 1");
        assertThatThrownBy(() -> Dataset.RANDOM.requests(1, 1, 259, 4096, 4096)).hasMessageContaining("--max-new-tokens must be in 1..4095");
        assertThat(Dataset.parse("Long-Prompt")).isEqualTo(Dataset.LONG_PROMPT);
    }
}
