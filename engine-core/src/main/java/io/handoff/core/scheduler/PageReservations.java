package io.handoff.core.scheduler;

import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.QuarantineTimes;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.core.kv.ReqToTokenTable;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.core.prefix.PrefixInsert;
import io.handoff.core.prefix.PrefixMatch;
import io.handoff.trace.FinishReason;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * Admission and release: what a request may hold and when it gives it back. Admission reserves a
 * {@code req_to_token} row and every page the request can need (prompt plus {@code max_new_tokens}),
 * less what the prefix cache already holds, so a running request never runs out of pages. Release
 * returns them once no step touches them and the handoff allows, caching what was computed.
 * Scheduler thread only, except {@link #checkAdmissible}.
 */
final class PageReservations
{
    private static final Logger log = LogManager.getLogger(PageReservations.class);

    private final ModelConfig model;
    private final int pageSize;
    private final PagePool pagePool;
    private final ReqToTokenTable reqToToken;
    private final PrefixCache prefixCache;
    private final KvHandoff handoff;
    // how a release that waits for another thread gets back onto the scheduler thread
    private final Consumer<SchedulerCommand> post;
    private final QuarantineTimes quarantineTimes = new QuarantineTimes();

    PageReservations(ModelConfig model, int pageSize, PagePool pagePool, ReqToTokenTable reqToToken, PrefixCache prefixCache,
            KvHandoff handoff, Consumer<SchedulerCommand> post)
    {
        this.model = requireNonNull(model, "model is null");
        this.pageSize = pageSize;
        this.pagePool = requireNonNull(pagePool, "pagePool is null");
        this.reqToToken = requireNonNull(reqToToken, "reqToToken is null");
        this.prefixCache = requireNonNull(prefixCache, "prefixCache is null");
        this.handoff = requireNonNull(handoff, "handoff is null");
        this.post = requireNonNull(post, "post is null");
    }

    /**
     * Throws {@link RequestRejectedException} when the request can never run: a token outside the
     * vocabulary, too long for the context, or more pages than the pool has. Any thread.
     */
    void checkAdmissible(GenerateRequest request)
    {
        int vocab = model.vocabSize();
        for (int id : request.promptIds()) {
            if (id < 0 || id >= vocab) {
                throw new RequestRejectedException(RequestRejectedException.Kind.INVALID,
                        "token id " + id + " is outside the vocabulary [0, " + vocab + ")");
            }
        }
        int context = model.maxContext();
        long needed = (long) request.promptIds().length + request.maxNewTokens();
        if (needed > context) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "prompt (" + request.promptIds().length
                    + " tokens) + max_new_tokens (" + request.maxNewTokens() + ") = " + needed + " exceeds the model's context of " + context);
        }
        int pages = pagesFor(request.promptIds().length + request.maxNewTokens() - 1);
        if (pages > pagePool.totalPages()) {
            throw new RequestRejectedException(RequestRejectedException.Kind.INVALID, "the request needs " + pages
                    + " KV pages but the pool has " + pagePool.totalPages() + ": shorten it or enlarge handoff.kv.pool-pages");
        }
    }

    /** How long quarantines lasted; any thread. */
    QuarantineTimes quarantineTimes()
    {
        return quarantineTimes;
    }

    /** Whether a request could be admitted now at all: finished requests keep their row until released. */
    boolean hasFreeRow()
    {
        return reqToToken.freeRows() > 0;
    }

    /**
     * Reserves a row and the request's pages, reusing the longest cached prefix, and makes it RUNNING;
     * false (holding nothing) when the pool cannot supply them even after evicting unlocked prefixes.
     */
    boolean reserve(ScheduledRequest request)
    {
        int[] prompt = request.request.promptIds();
        boolean receives = handoff.receivesPrompt(request.handoffView(pageSize));
        // Leave at least one prompt token to compute: its logits give the first output token. A decode
        // that receives its prompt's KV takes the rest from the peer, and at least the last prompt page.
        PrefixMatch match = prefixCache.match(prompt, receives ? (handoff.reusesCachedPrompt() ? prompt.length - 1 : 0) : reusablePrefix(request));
        pagePool.retain(match.pages());
        prefixCache.lock(match.node());
        int needed = pagesFor(request.kvPositions()) - match.pageCount();
        if (pagePool.freePages() < needed) {
            prefixCache.evictUntilFree(needed);
        }
        // a data-parallel server: all of a request's pages in one rank's part, the part of its cached prefix, else the emptiest
        request.owner = match.pageCount() > 0 ? pagePool.partitionOf(match.pages()[0]) : emptiestPart();
        Optional<int[]> fresh = pagePool.freePages() >= needed ? pagePool.allocate(needed, request.owner) : Optional.empty();
        if (fresh.isEmpty()) {
            prefixCache.unlock(match.node());
            pagePool.release(match.pages());
            return false;
        }
        int[] pages = Arrays.copyOf(match.pages(), match.pageCount() + needed);
        System.arraycopy(fresh.get(), 0, pages, match.pageCount(), needed);
        request.row = reqToToken.allocateRow().orElseThrow(() -> new IllegalStateException("no free req_to_token row"));
        reqToToken.mapPages(request.row, 0, request.kvPositions(), pages);
        request.pages = pages;
        request.lockedPrefix = match.node();
        request.cachedTokens = match.length();
        request.scheduledPromptTokens = match.length();
        request.computedPromptTokens = match.length();
        request.admittedNanos = System.nanoTime();
        request.phase = ScheduledRequest.Phase.RUNNING;
        if (receives) {
            // Neither prefilled nor decoded here until the peer's KV lands: scheduledOutputs stays 0.
            request.heldPromptPages = match.pageCount();
            pagePool.markReceiving(promptPages(request));
            request.receivingPrompt = true;
            request.scheduledPromptTokens = prompt.length;
        }
        return true;
    }

    /** The part of the pool with the most free pages (the lowest of equals): where a data-parallel server puts a new request. */
    private int emptiestPart()
    {
        int best = 0;
        int most = -1;
        for (int part = 0; part < pagePool.partitions(); part++) {
            int free = pagePool.partitions() == 1 ? pagePool.freePages() : pagePool.freePages(part);
            if (free > most) {
                most = free;
                best = part;
            }
        }
        return best;
    }

    /**
     * The most cached prompt tokens the request may reuse: all but the last, whose logits give the first output token, and
     * none of the positions whose logits give a prompt token's log probability ({@code inputFrom - 1} on), which this
     * request must compute itself.
     */
    private static int reusablePrefix(ScheduledRequest request)
    {
        return Math.min(request.promptLength() - 1, request.inputFrom - 1);
    }

    /** Decode: the peer's prompt KV landed in the request's RECEIVING pages; they become ordinary pages. */
    void promptReceived(ScheduledRequest request)
    {
        pagePool.commitReceived(promptPages(request));
        request.receivingPrompt = false;
    }

    /**
     * Returns the pages of a finished request once no in-flight step touches them (its last step is at
     * most {@code completedStep}) and its handoff lets them go; false while it must still wait, in which
     * case a {@link SchedulerCommand.Wake} arrives when what it waits for completes.
     */
    boolean tryRelease(ScheduledRequest request, long completedStep)
    {
        if (request.lastStep > completedStep) {
            return false;
        }
        if (request.release == null) {
            request.release = handoff.finished(request.handoffView(pageSize), request.finishReason, request.error, Optional.ofNullable(request.cause));
        }
        if (request.release instanceof KvHandoff.AfterTransfers(CompletableFuture<Optional<KvHandoff.HandoffFailure>> done)) {
            if (!done.isDone()) {
                if (!request.releaseWatched) {
                    request.releaseWatched = true;
                    done.whenComplete((ignored, error) -> post.accept(new SchedulerCommand.Wake()));
                }
                return false;
            }
            handoffFailed(request, done.isCompletedExceptionally() ? Optional.empty() : done.join());
        }
        release(request);
        return true;
    }

    /** The room failed on its own: the result reports it (an error the engine reported first stays, with its cause). */
    private static void handoffFailed(ScheduledRequest request, Optional<KvHandoff.HandoffFailure> failure)
    {
        if (failure.isEmpty()) {
            return;
        }
        if (request.finishReason != FinishReason.ERROR) {
            request.finishReason = FinishReason.ERROR;
            request.error = failure.get().message();
        }
        if (request.cause == null) {
            request.cause = failure.get().cause();
        }
    }

    private void release(ScheduledRequest request)
    {
        if (request.finishReason != FinishReason.ERROR) {
            // What this request computed becomes a prefix other requests can reuse.
            int[] tokens = request.tokensWithKv();
            PrefixInsert inserted = prefixCache.insert(tokens, tokens.length, request.pages);
            if (inserted.duplicates().length > 0) {
                log.trace("request {}: {} pages duplicated cached ones", request.request.rid(), inserted.duplicates().length);
            }
        }
        prefixCache.unlock(request.lockedPrefix);
        int[] pages = request.pages;
        if (request.receivingPrompt) {
            int[] promptPages = promptPages(request);
            int[] others = new int[pages.length - promptPages.length];
            System.arraycopy(pages, 0, others, 0, request.heldPromptPages);
            System.arraycopy(pages, request.heldPromptPages + promptPages.length, others, request.heldPromptPages, others.length - request.heldPromptPages);
            pages = others;
            if (request.release instanceof KvHandoff.Quarantine(CompletableFuture<ReleaseProof> proof)) {
                // A peer may still write these (I2): nobody gets them until the proof arrives, however long that takes.
                pagePool.quarantine(promptPages);
                long since = System.nanoTime();
                proof.whenComplete((value, error) -> post.accept(new SchedulerCommand.ProofArrived(promptPages, value, error, since)));
            }
            else {
                pagePool.commitReceived(promptPages);
                pagePool.release(promptPages);
            }
        }
        pagePool.release(pages);
        reqToToken.freeRow(request.row);
        request.pages = new int[0];
    }

    /** Frees quarantined prompt pages on their proof; without one they stay quarantined for good. */
    void proofArrived(SchedulerCommand.ProofArrived arrived)
    {
        if (arrived.failure() != null || arrived.proof() == null) {
            log.error("no release proof for quarantined pages {}: they stay quarantined (a write may still land in them)",
                    Arrays.toString(arrived.pages()), arrived.failure());
            return;
        }
        pagePool.releaseQuarantined(arrived.pages(), arrived.proof());
        quarantineTimes.ended(System.nanoTime() - arrived.sinceNanos());
    }

    /** The prompt's pages a decode receives: all but those its prefix cache held at admission. */
    private int[] promptPages(ScheduledRequest request)
    {
        return Arrays.copyOfRange(request.pages, request.heldPromptPages, Math.ceilDiv(request.promptLength(), pageSize));
    }

    private int pagesFor(int positions)
    {
        return Math.ceilDiv(Math.max(positions, 1), pageSize);
    }
}
