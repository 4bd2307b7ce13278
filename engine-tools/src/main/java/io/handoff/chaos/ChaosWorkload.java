package io.handoff.chaos;

import io.handoff.demo.Workload;

/**
 * The soak's prompts: the demo's generated questions after a one-example prefix of their own, short enough that
 * hundreds of requests (and their colocated reference) fit in a minute on two cores, and shared so the prefix cache
 * and early send take part.
 */
final class ChaosWorkload
{
    private static final String PREFIX = """
            Question: A farmer keeps 4 pens of 6 goats and sells 9 goats. How many goats are left?
            Answer: There are 4 * 6 = 24 goats and 24 - 9 = 15 remain. The answer is 15.

            """;

    private ChaosWorkload() {}

    static Workload of(int requests, long seed)
    {
        return new Workload(PREFIX, Workload.fewShot(requests, seed).questions());
    }
}
