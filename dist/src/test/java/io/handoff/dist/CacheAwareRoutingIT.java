package io.handoff.dist;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two prefills and a decode (processes of the built distribution) behind a router, a workload of a few shared prefixes:
 * the prefills' prefix-cache hit rate under {@code cache-aware} against {@code round-robin}, outputs equal to colocated.
 */
class CacheAwareRoutingIT
{
    private static final int NEW_TOKENS = 6;
    // Measured on this workload (4 prefixes x 8 suffixes, 2 prefills, requests one at a time, the byte tokenizer, pages of
    // 16 tokens): round-robin 0.683 (each prefix cold on both prefills), cache-aware 0.777 (each cold on one).
    private static final double MARGIN = 0.05;

    @TempDir
    Path temp;

    /** 4 prefixes of some 200 chars, each with 8 suffixes, in a seeded order. */
    private static List<String> workload()
    {
        String[] topics = {"the KV cache of a transformer", "prefill and decode disaggregation", "radix trees over token ids", "circuit breakers for servers"};
        List<String> prompts = new ArrayList<>();
        for (String topic : topics) {
            String prefix = ("System: you are a terse expert on " + topic + ". Answer in one short line, no preamble, no lists, "
                    + "and say so when you do not know. Context: " + topic + " matters to serving large language models. ");
            for (int i = 0; i < 8; i++) {
                prompts.add(prefix + "Q" + i + ": what about case " + (i * 7 + 3) + "? A:");
            }
        }
        Collections.shuffle(prompts, new Random(15));
        return prompts;
    }

    @Test
    void cacheAwareRoutingHitsThePrefixCacheMoreThanRoundRobinWithTheColocatedOutputs()
            throws Exception
    {
        List<String> prompts = workload();
        List<List<Integer>> reference = Launcher.colocated(temp, prompts, NEW_TOKENS);
        double roundRobin = hitRate("round-robin", prompts, reference);
        double cacheAware = hitRate("cache-aware", prompts, reference);
        System.out.printf("prefix-cache hit rate on the prefills, %d prompts (4 prefixes x 8 suffixes): round-robin %.3f, cache-aware %.3f%n",
                prompts.size(), roundRobin, cacheAware);
        assertThat(cacheAware).isGreaterThan(roundRobin + MARGIN);
    }

    /** Runs the prompts one at a time (each once nothing is in flight) through fresh servers and a router whose prefill policy is {@code policy}. */
    private double hitRate(String policy, List<String> prompts, List<List<Integer>> reference)
            throws Exception
    {
        try (ServerProcess first = ServerProcess.serve(temp, "prefill");
                ServerProcess second = ServerProcess.serve(temp, "prefill");
                ServerProcess decode = ServerProcess.serve(temp, "decode");
                ServerProcess router = ServerProcess.router(temp, List.of(first, second), List.of(decode), "-Dhandoff.router.policy.prefill=" + policy)) {
            List<List<Integer>> outputs = new ArrayList<>();
            for (String prompt : prompts) {
                HttpResponse<String> answer = router.post("/generate", body(prompt));
                assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
                outputs.add(ServerProcess.outputIds(ServerProcess.json(answer.body())));
                // the next one with every load back to zero: the trees decide, not when a prefill's answer came back
                router.awaitNothingInFlight();
            }
            assertThat(outputs).as(policy + ": every output equals the colocated one").isEqualTo(reference);
            double cached = first.metric("handoff_cached_prompt_tokens_total") + second.metric("handoff_cached_prompt_tokens_total");
            double total = first.metric("handoff_prompt_tokens_total") + second.metric("handoff_prompt_tokens_total");
            assertThat(first.metric("handoff_prompt_tokens_total")).as("both prefills had work").isPositive();
            assertThat(second.metric("handoff_prompt_tokens_total")).as("both prefills had work").isPositive();
            System.out.printf("%s: prefill 1 cached %.0f of %.0f prompt tokens, prefill 2 %.0f of %.0f%n", policy,
                    first.metric("handoff_cached_prompt_tokens_total"), first.metric("handoff_prompt_tokens_total"),
                    second.metric("handoff_cached_prompt_tokens_total"), second.metric("handoff_prompt_tokens_total"));
            first.assertNoPagesLeaked();
            second.assertNoPagesLeaked();
            decode.assertNoPagesLeaked();
            return cached / total;
        }
    }

    private static String body(String prompt)
    {
        return ServerProcess.greedyBody(prompt, NEW_TOKENS);
    }
}
