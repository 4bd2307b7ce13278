package io.handoff.core.scheduler;

import io.handoff.core.grammar.TokenGrammar;
import io.handoff.core.model.SamplingParams;

import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * One generation request as the scheduler takes it: token ids in, token ids out.
 *
 * @param stopTokenIds ids that end the request (besides EOS unless {@code ignoreEos})
 * @param returnLogits keep each sampled position's logits in the result (tests and probes)
 * @param ticket the transfer session of a disaggregated request; empty on a colocated engine
 * @param logprobs the log probabilities to return; empty: none
 * @param constraint the grammar its output must follow (JSON Schema, regex, EBNF, a tool call); empty: none
 */
public record GenerateRequest(
        String rid,
        int[] promptIds,
        int maxNewTokens,
        SamplingParams sampling,
        Set<Integer> stopTokenIds,
        boolean ignoreEos,
        boolean returnLogits,
        Optional<RoomTicket> ticket,
        Optional<LogprobRequest> logprobs,
        Optional<TokenGrammar> constraint)
{
    public GenerateRequest
    {
        requireNonNull(rid, "rid is null");
        requireNonNull(promptIds, "promptIds is null");
        requireNonNull(sampling, "sampling is null");
        stopTokenIds = Set.copyOf(requireNonNull(stopTokenIds, "stopTokenIds is null"));
        requireNonNull(ticket, "ticket is null");
        requireNonNull(logprobs, "logprobs is null");
        requireNonNull(constraint, "constraint is null");
        if (promptIds.length == 0) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the prompt is empty");
        }
        if (maxNewTokens < 1) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "max_new_tokens must be at least 1, got " + maxNewTokens);
        }
        if (logprobs.isPresent() && logprobs.get().inputStart() >= promptIds.length) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the logprob start " + logprobs.get().inputStart()
                    + " is not a prompt position: the prompt has " + promptIds.length + " tokens");
        }
    }

    public GenerateRequest(String rid, int[] promptIds, int maxNewTokens, SamplingParams sampling, Set<Integer> stopTokenIds,
            boolean ignoreEos, boolean returnLogits, Optional<RoomTicket> ticket, Optional<LogprobRequest> logprobs)
    {
        this(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, ticket, logprobs, Optional.empty());
    }

    public GenerateRequest(String rid, int[] promptIds, int maxNewTokens, SamplingParams sampling, Set<Integer> stopTokenIds,
            boolean ignoreEos, boolean returnLogits, Optional<RoomTicket> ticket)
    {
        this(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, ticket, Optional.empty());
    }

    public GenerateRequest(String rid, int[] promptIds, int maxNewTokens, SamplingParams sampling, Set<Integer> stopTokenIds,
            boolean ignoreEos, boolean returnLogits)
    {
        this(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, Optional.empty());
    }

    public static GenerateRequest greedy(String rid, int[] promptIds, int maxNewTokens)
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, SamplingParams.GREEDY, Set.of(), false, false);
    }

    public GenerateRequest withLogits()
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, true, ticket, logprobs, constraint);
    }

    public GenerateRequest withTicket(RoomTicket roomTicket)
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, Optional.of(roomTicket), logprobs, constraint);
    }

    public GenerateRequest withLogprobs(LogprobRequest request)
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, ticket, Optional.of(request), constraint);
    }

    public GenerateRequest withConstraint(TokenGrammar grammar)
    {
        return new GenerateRequest(rid, promptIds, maxNewTokens, sampling, stopTokenIds, ignoreEos, returnLogits, ticket, logprobs, Optional.of(grammar));
    }
}
