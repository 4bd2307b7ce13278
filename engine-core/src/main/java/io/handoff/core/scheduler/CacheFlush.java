package io.handoff.core.scheduler;

/**
 * What {@link Scheduler#flushCache()} did: the prefix cache dropped every page it held, or, while requests were running
 * or waiting, nothing at all.
 *
 * @param flushed whether the cache was flushed
 * @param droppedPages cached pages that went back to the free pool (0 when refused)
 * @param running requests admitted when the flush was tried: running, receiving their prompt's KV, or still
 *         releasing their pages (a transfer may still read them)
 * @param waiting requests submitted and not yet admitted
 * @param freePages free pages in the pool right after
 */
public record CacheFlush(boolean flushed, int droppedPages, int running, int waiting, int freePages)
{
    public CacheFlush
    {
        if (droppedPages < 0 || running < 0 || waiting < 0 || freePages < 0) {
            throw new IllegalArgumentException("negative count in a cache flush: dropped=" + droppedPages + " running=" + running
                    + " waiting=" + waiting + " free=" + freePages);
        }
        if (flushed && (running > 0 || waiting > 0)) {
            throw new IllegalArgumentException("a cache flush cannot succeed with " + running + " running and " + waiting + " waiting requests");
        }
    }

    /** Why it was refused, for an operator; empty text when it was not. */
    public String refusal()
    {
        return flushed ? "" : running + " request(s) running and " + waiting + " waiting: the prefix cache is flushed only while the "
                + "engine is idle, so nothing was dropped; retry once they have finished";
    }

    static CacheFlush refused(int running, int waiting, int freePages)
    {
        return new CacheFlush(false, 0, running, waiting, freePages);
    }

    static CacheFlush done(int droppedPages, int freePages)
    {
        return new CacheFlush(true, droppedPages, 0, 0, freePages);
    }
}
