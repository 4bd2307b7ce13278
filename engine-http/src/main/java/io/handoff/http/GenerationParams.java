package io.handoff.http;

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
record GenerationParams(
        String rid,
        int[] promptIds,
        int maxNewTokens,
        SamplingOptions options,
        Optional<LogprobOptions> logprobs,
        Optional<RoomTicket> ticket)
{
    GenerationParams
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(options, "options is null");
        requireNonNull(logprobs, "logprobs is null");
        requireNonNull(ticket, "ticket is null");
    }

    List<String> stops()
    {
        return options.stops();
    }

    Set<Integer> stopTokenIds()
    {
        return options.stopTokenIds();
    }

    GenerateRequest toRequest()
    {
        GenerateRequest request = new GenerateRequest(rid, promptIds, maxNewTokens, options.sampling(), options.stopTokenIds(),
                options.ignoreEos(), false, ticket);
        return logprobs.map(wanted -> request.withLogprobs(wanted.request(promptIds.length))).orElse(request);
    }
}
