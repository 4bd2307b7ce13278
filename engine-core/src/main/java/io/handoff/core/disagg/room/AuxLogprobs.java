package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlCodec;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.core.scheduler.TokenLogprobs;

import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * The log probabilities a decode accepts in its room's aux record: exactly the shape its own copy of the request implies,
 * since the prefill is a peer and its bytes are hostile. Present iff the request asked for them; the first token's as the
 * only output entry; the prompt's from the request's {@code inputFrom} to the prompt's end, each naming the prompt's own
 * token; every entry with exactly {@code topN} alternatives, ids in the vocabulary, values finite, at most 0, and the
 * alternatives most likely first.
 */
public final class AuxLogprobs
{
    private final int[] promptIds;
    private final Optional<LogprobRequest> request;
    private final int vocabSize;

    private AuxLogprobs(int[] promptIds, Optional<LogprobRequest> request, int vocabSize)
    {
        this.promptIds = requireNonNull(promptIds, "promptIds is null");
        this.request = requireNonNull(request, "request is null");
        this.vocabSize = vocabSize;
    }

    /** What a room of {@code request} must carry. */
    public static AuxLogprobs expected(HandoffRequest request)
    {
        return new AuxLogprobs(request.promptIds().clone(), request.logprobs(), request.vocabSize());
    }

    /** What a room of a request that asked for no log probabilities must carry: none. */
    static AuxLogprobs none()
    {
        return new AuxLogprobs(new int[0], Optional.empty(), 0);
    }

    /**
     * Refuses a disaggregated request whose aux record could exceed one control frame ({@link ControlCodec#MAX_FRAME_BYTES}):
     * with at most {@link LogprobRequest#MAX_TOP_N} alternatives that is a prompt of about 99 thousand tokens whose every
     * log probability is asked for. Counted with a checksum per token (pages of one token), so that a prefill and a decode
     * refuse the same requests whatever their page size.
     */
    public static void checkFits(GenerateRequest request)
    {
        if (request.ticket().isEmpty() || request.logprobs().isEmpty()) {
            return;
        }
        long bytes = ControlCodec.auxRecordBytes(request.promptIds().length, 1, request.logprobs());
        if (bytes > ControlCodec.MAX_FRAME_BYTES) {
            LogprobRequest logprobs = request.logprobs().get();
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the log probabilities of " + request.promptIds().length
                    + " prompt tokens from position " + logprobs.inputStart() + " with " + logprobs.topN() + " alternatives each take "
                    + bytes + " bytes to reach the decode, more than one control frame holds (" + ControlCodec.MAX_FRAME_BYTES
                    + "): ask for fewer alternatives or start the prompt's log probabilities later");
        }
    }

    /** Why {@code received} (with the record's {@code firstToken}) is not what this room must carry, or empty when it is. */
    Optional<String> violation(int firstToken, Optional<Logprobs> received)
    {
        if (received.isPresent() != request.isPresent()) {
            return Optional.of(request.isPresent() ? "aux record carries no log probabilities, but the request asked for them"
                    : "aux record carries log probabilities the request did not ask for");
        }
        if (received.isEmpty()) {
            return Optional.empty();
        }
        if (firstToken < 0 || firstToken >= vocabSize) {
            return Optional.of("aux record's first token " + firstToken + " is outside the vocabulary [0, " + vocabSize + ")");
        }
        Logprobs logprobs = received.get();
        int topN = request.get().topN();
        int inputFrom = TokenLogprobs.inputFrom(request.get(), promptIds.length);
        if (logprobs.inputFrom() != inputFrom || logprobs.input().size() != promptIds.length - inputFrom) {
            return Optional.of("aux record carries " + logprobs.input().size() + " prompt log probabilities from position " + logprobs.inputFrom()
                    + "; the request's are " + (promptIds.length - inputFrom) + " from position " + inputFrom);
        }
        if (logprobs.output().size() != 1) {
            return Optional.of("aux record carries " + logprobs.output().size() + " output log probabilities; the first token has one");
        }
        Optional<String> bad = entry("the first token's", logprobs.output().getFirst(), firstToken, topN);
        List<TokenLogprob> input = logprobs.input();
        for (int i = 0; i < input.size() && bad.isEmpty(); i++) {
            bad = entry("prompt position " + (inputFrom + i) + "'s", input.get(i), promptIds[inputFrom + i], topN);
        }
        return bad;
    }

    private Optional<String> entry(String what, TokenLogprob entry, int tokenId, int topN)
    {
        if (entry.tokenId() != tokenId) {
            return Optional.of("aux record gives " + what + " log probability for token " + entry.tokenId() + "; the token there is " + tokenId);
        }
        if (entry.topIds().length != topN) {
            return Optional.of("aux record gives " + what + " log probability " + entry.topIds().length + " alternatives; the request asked for " + topN);
        }
        if (!probability(entry.logprob())) {
            return Optional.of("aux record gives " + what + " log probability as " + entry.logprob() + ", which is no log probability");
        }
        for (int i = 0; i < topN; i++) {
            int id = entry.topIds()[i];
            float value = entry.topLogprobs()[i];
            if (id < 0 || id >= vocabSize) {
                return Optional.of("aux record names token " + id + " among " + what + " alternatives, outside the vocabulary [0, " + vocabSize + ")");
            }
            if (!probability(value) || (i > 0 && value > entry.topLogprobs()[i - 1])) {
                return Optional.of("aux record gives " + what + " alternative " + i + " the log probability " + value
                        + ", which is none or out of order (most likely first)");
            }
        }
        return Optional.empty();
    }

    private static boolean probability(float logprob)
    {
        return Float.isFinite(logprob) && logprob <= 0;
    }
}
