package io.handoff.core.scheduler;

import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.PageState;
import io.handoff.core.kv.ReqToTokenTable;
import io.handoff.core.prefix.PrefixCache;
import io.handoff.core.prefix.RadixCache;

import java.util.Collection;
import java.util.List;

/**
 * The scheduler's page ledger, checked: who holds each page must explain its refcount exactly. A page
 * leaked by an abort path, or released twice, shows up here as a mismatch naming the page.
 */
final class SchedulerInvariants
{
    private SchedulerInvariants() {}

    /**
     * Throws {@link IllegalStateException} naming the first violation: the pool's own invariants, waiting
     * requests holding anything, admitted requests without exactly one req_to_token row each, or a page whose
     * refcount differs from the number of admitted requests holding it plus one if the prefix cache holds it
     * (and that is free iff nobody holds it). Runs on the scheduler thread, which owns all of this state.
     */
    static void check(PagePool pool, ReqToTokenTable reqToToken, PrefixCache prefixCache, Collection<ScheduledRequest> waiting,
            List<? extends Collection<ScheduledRequest>> admitted)
    {
        pool.checkInvariants();
        for (ScheduledRequest request : waiting) {
            if (request.pages.length > 0 || request.row >= 0) {
                throw new IllegalStateException("waiting request " + request.request.rid() + " holds " + request.pages.length
                        + " pages and row " + request.row);
            }
        }
        int[] holders = new int[pool.totalPages()];
        int rows = 0;
        for (Collection<ScheduledRequest> requests : admitted) {
            for (ScheduledRequest request : requests) {
                rows++;
                for (int page : request.pages) {
                    holders[page]++;
                }
            }
        }
        int rowsInUse = reqToToken.rows() - reqToToken.freeRows();
        if (rowsInUse != rows) {
            throw new IllegalStateException(rowsInUse + " req_to_token rows are in use but " + rows + " requests are admitted");
        }
        if (prefixCache instanceof RadixCache radix) {
            radix.checkInvariants();
            for (int page : radix.cachedPageIds()) {
                holders[page]++;
            }
        }
        else if (prefixCache.cachedPages() != 0) {
            return; // a cache that does not list its pages: the pool's own check is all we can do
        }
        for (int page = 0; page < holders.length; page++) {
            PageState state = pool.state(page);
            int refCount = pool.refCount(page);
            if (state == PageState.QUARANTINED) {
                // waiting for proof that no write can still land (I2): nobody may hold it, nobody may get it
                if (refCount != 0 || holders[page] != 0) {
                    throw new IllegalStateException("quarantined page " + page + " has refcount " + refCount + " and " + holders[page] + " holders");
                }
                continue;
            }
            if (refCount != holders[page] || (holders[page] == 0) != (state == PageState.FREE)) {
                throw new IllegalStateException("page " + page + " is " + state + " with refcount " + refCount + " but "
                        + holders[page] + " holders (admitted requests and the prefix cache) account for it");
            }
        }
    }
}
