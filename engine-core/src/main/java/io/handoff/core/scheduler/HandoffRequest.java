package io.handoff.core.scheduler;

import java.util.Optional;

/**
 * What a {@link KvHandoff} sees of a request: its id, room, prompt, and the pages the scheduler gave it
 * (its whole page list from position 0; a copy), the log probabilities it asked for, the model's vocabulary size
 * (what a decode checks the token ids a prefill sends against), and, on a decode that receives the prompt, how many of
 * the prompt's leading pages its prefix cache held already ({@code heldPages}: they are not received).
 */
public record HandoffRequest(String rid, Optional<RoomTicket> ticket, int[] promptIds, int[] pages, int pageSize,
        Optional<LogprobRequest> logprobs, int vocabSize, int heldPages)
{
    public HandoffRequest(String rid, Optional<RoomTicket> ticket, int[] promptIds, int[] pages, int pageSize, Optional<LogprobRequest> logprobs,
            int vocabSize)
    {
        this(rid, ticket, promptIds, pages, pageSize, logprobs, vocabSize, 0);
    }

    /** Pages that hold the prompt's KV. */
    public int promptPages()
    {
        return Math.ceilDiv(promptIds.length, pageSize);
    }
}
