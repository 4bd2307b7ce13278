package io.handoff.http;

import io.handoff.core.model.SamplingParams;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.RoomTicket;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One generation as either API asks for it, after validation.
 *
 * @param stops stop strings: the output ends before the first one (matched in the decoded text)
 * @param stopTokenIds token ids that end the output (not part of its text)
 */
record GenerationParams(
        String rid,
        int[] promptIds,
        int maxNewTokens,
        SamplingParams sampling,
        List<String> stops,
        Set<Integer> stopTokenIds,
        boolean ignoreEos,
        Optional<RoomTicket> ticket)
{
    GenerationParams
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(sampling, "sampling is null");
        stops = List.copyOf(requireNonNull(stops, "stops is null"));
        stopTokenIds = Set.copyOf(requireNonNull(stopTokenIds, "stopTokenIds is null"));
        requireNonNull(ticket, "ticket is null");
    }

    /**
     * This generation as output {@code seedOffset} of its prompt in a group: its own rid and room, and the seed
     * {@code seed + seedOffset}, so a prompt's outputs differ when they sample and each stays reproducible.
     */
    GenerationParams forOutput(String outputRid, int seedOffset, Optional<RoomTicket> outputTicket)
    {
        return new GenerationParams(outputRid, promptIds, maxNewTokens, sampling.withSeed(sampling.seed() + seedOffset), stops, stopTokenIds,
                ignoreEos, outputTicket);
    }

    /**
     * A one-token greedy run of this prompt that returns nothing to the client: it leaves the prompt's KV in the
     * prefix cache, so the outputs that follow share it instead of each computing it.
     */
    GenerationParams promptRun(String runRid)
    {
        return new GenerationParams(runRid, promptIds, 1, SamplingParams.GREEDY, List.of(), Set.of(), true, Optional.empty());
    }

    GenerateRequest toRequest()
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, false, ticket);
    }
}
