package io.handoff.core.scheduler;

import io.handoff.core.kv.ReqToTokenTable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * Chooses what the next forward step runs: one decode token for every request past its prefill, then
 * prompt chunks, in admission order, within the chunked-prefill token budget. Scheduler thread only.
 */
final class BatchPlanner
{
    private static final int[] NO_PAGES = new int[0];
    // logits a step may keep for prompt log probabilities (256 MiB of floats: 512 positions of a 128k vocabulary); how a
    // prompt is chunked does not change what it computes
    static final int LOGIT_FLOATS_PER_STEP = 1 << 26;

    private final int chunkedPrefillSize;
    private final int pageSize;
    // the decode-metadata probe needs each decode's page list; without it the copy is skipped
    private final boolean probe;
    private final ReqToTokenTable reqToToken;
    private final KvHandoff handoff;
    // positions whose logits a step may keep for prompt log probabilities (at least a page, so one such request runs)
    private final int maxLogitRows;

    /** {@code chunkedPrefillSize} is at least {@code pageSize} (the scheduler checks it), so a chunk always holds a page. */
    BatchPlanner(int chunkedPrefillSize, int pageSize, boolean probe, ReqToTokenTable reqToToken, KvHandoff handoff, int vocabSize)
    {
        this.maxLogitRows = Math.max(pageSize, LOGIT_FLOATS_PER_STEP / vocabSize);
        this.chunkedPrefillSize = chunkedPrefillSize;
        this.pageSize = pageSize;
        this.probe = probe;
        this.reqToToken = requireNonNull(reqToToken, "reqToToken is null");
        this.handoff = requireNonNull(handoff, "handoff is null");
    }

    /**
     * The plan of step {@code step} over the running requests, marking what it schedules on them; empty
     * when none of them has anything to run now.
     */
    Optional<StepPlan> plan(long step, List<ScheduledRequest> running)
    {
        Fence fence = new Fence(step);
        List<StepPlan.Decode> decodes = decodes(step, running);
        List<StepPlan.Chunk> chunks = chunks(step, fence, running);
        if (chunks.isEmpty() && decodes.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new StepPlan(step, fence, chunks, decodes));
    }

    private List<StepPlan.Decode> decodes(long step, List<ScheduledRequest> running)
    {
        List<StepPlan.Decode> decodes = new ArrayList<>();
        for (ScheduledRequest request : running) {
            if (request.prefillScheduled() && request.scheduledOutputs >= 1 && request.scheduledOutputs < request.request.maxNewTokens()) {
                int index = request.scheduledOutputs;
                int position = request.promptLength() + index - 1;
                int[] pages = probe ? Arrays.copyOf(request.pages, Math.ceilDiv(position + 1, pageSize)) : NO_PAGES;
                decodes.add(new StepPlan.Decode(request, index, position, reqToToken.read(request.row, position + 1), pages));
                request.scheduledOutputs++;
                request.lastStep = step;
            }
        }
        return decodes;
    }

    private List<StepPlan.Chunk> chunks(long step, Fence fence, List<ScheduledRequest> running)
    {
        List<StepPlan.Chunk> chunks = new ArrayList<>();
        int budget = chunkedPrefillSize;
        int logitRows = maxLogitRows;
        for (ScheduledRequest request : running) {
            if (request.prefillScheduled() || budget == 0) {
                continue;
            }
            int from = request.scheduledPromptTokens;
            int remaining = request.promptLength() - from;
            boolean keepsLogits = request.needsPromptLogits(request.promptLength() - 2);
            int length = Math.min(remaining, keepsLogits ? Math.min(budget, logitRows) : budget);
            if (length < remaining) {
                // Non-last chunks end on a page boundary, so every chunk's pages are whole (what transfers send).
                length -= (from + length) % pageSize;
            }
            if (length <= 0) {
                break;
            }
            int to = from + length;
            boolean last = to == request.promptLength();
            chunks.add(new StepPlan.Chunk(request, from, to, reqToToken.read(request.row, to), last));
            handoff.chunkScheduled(request.handoffView(pageSize), from, to, fence);
            request.scheduledPromptTokens = to;
            if (last) {
                request.scheduledOutputs = 1;
            }
            request.lastStep = step;
            budget -= length;
            if (keepsLogits) {
                logitRows -= length;
            }
        }
        return chunks;
    }
}
