package io.handoff.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.handoff.core.scheduler.CacheFlush;
import io.handoff.core.scheduler.Scheduler;
import io.handoff.http.base.ApiError;
import io.handoff.http.base.Exchange;
import io.handoff.http.base.JsonFields;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.util.Objects.requireNonNull;

/**
 * SGLang's {@code GET|POST /flush_cache}: drops every prefix the cache holds, its pages back to the free pool. As in
 * SGLang it is refused with 400 while requests run or wait (on a decode, rooms receiving KV count as running), and
 * then the cache is left as it was.
 */
final class FlushCache
{
    // the scheduler thread takes it between two steps: a step's forward is what it may wait for
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final Scheduler scheduler;

    FlushCache(Scheduler scheduler)
    {
        this.scheduler = requireNonNull(scheduler, "scheduler is null");
    }

    void handle(Exchange exchange)
            throws IOException, InterruptedException
    {
        CacheFlush flush;
        try {
            flush = scheduler.flushCache().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
        catch (TimeoutException e) {
            throw ApiError.unavailable("scheduler_busy", "the scheduler did not get to the cache flush within " + WAIT.toSeconds()
                    + " s; nothing was flushed yet, and it will be tried once the scheduler gets to it");
        }
        catch (ExecutionException e) {
            throw ApiError.unavailable("shutting_down", "the cache cannot be flushed: " + e.getCause().getMessage());
        }
        if (!flush.flushed()) {
            throw ApiError.invalid("requests_in_flight", null, "cache not flushed: " + flush.refusal());
        }
        ObjectNode body = JsonFields.MAPPER.createObjectNode();
        body.put("success", true);
        body.put("message", "Cache flushed.");
        body.put("dropped_pages", flush.droppedPages());
        body.put("free_pages", flush.freePages());
        exchange.sendJson(200, body);
    }
}
