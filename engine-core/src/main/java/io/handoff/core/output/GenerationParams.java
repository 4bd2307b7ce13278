package io.handoff.core.output;

import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.RoomTicket;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One generation as any API asks for it, after validation: one prompt, how to sample and stop, and the log
 * probabilities to return.
 */
public record GenerationParams(
        String rid,
        int[] promptIds,
        int maxNewTokens,
        SamplingOptions options,
        Optional<LogprobOptions> logprobs,
        Optional<RoomTicket> ticket)
{
    public GenerationParams
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(options, "options is null");
        requireNonNull(logprobs, "logprobs is null");
        requireNonNull(ticket, "ticket is null");
    }

    public List<String> stops()
    {
        return options.stops();
    }

    public Set<Integer> stopTokenIds()
    {
        return options.stopTokenIds();
    }

    /**
     * This generation as output {@code seedOffset} of its prompt in a group: its own rid and room, and the seed
     * {@code seed + seedOffset}, so a prompt's outputs differ when they sample and each stays reproducible.
     */
    public GenerationParams forOutput(String outputRid, int seedOffset, Optional<RoomTicket> outputTicket)
    {
        SamplingOptions seeded = new SamplingOptions(options.sampling().withSeed(options.sampling().seed() + seedOffset), options.stops(),
                options.stopTokenIds(), options.ignoreEos(), options.noStopTrim(), options.skipSpecialTokens(), options.grammar());
        return new GenerationParams(outputRid, promptIds, maxNewTokens, seeded, logprobs, outputTicket);
    }

    /**
     * A one-token greedy run of this prompt that returns nothing to the client: it leaves the prompt's KV in the
     * prefix cache, so the outputs that follow share it instead of each computing it.
     */
    public GenerationParams promptRun(String runRid)
    {
        return new GenerationParams(runRid, promptIds, 1, SamplingOptions.HEALTH, Optional.empty(), Optional.empty());
    }

    public GenerateRequest toRequest()
    {
        GenerateRequest request = new GenerateRequest(rid, promptIds, maxNewTokens, options.sampling(), options.stopTokenIds(),
                options.ignoreEos(), false, ticket);
        return logprobs.map(wanted -> request.withLogprobs(wanted.request(promptIds.length))).orElse(request);
    }
}
