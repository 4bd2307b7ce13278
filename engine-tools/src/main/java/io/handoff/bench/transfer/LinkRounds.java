package io.handoff.bench.transfer;

import io.handoff.core.transfer.PlanListener;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.TransferPlan;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** Posts a round's plans on the core's transfer link, as a prefill posts a room's, and waits until every one was reported. */
record LinkRounds(TransferLink link, Duration limit)
{
    /** Returns the bytes the backend reported moved; throws when a plan failed or the round outran the limit. */
    long run(List<TransferPlan> plans)
            throws InterruptedException
    {
        CountDownLatch reported = new CountDownLatch(plans.size());
        AtomicLong bytes = new AtomicLong();
        AtomicReference<String> failure = new AtomicReference<>();
        PlanListener listener = new PlanListener()
        {
            @Override
            public void completed(TransferPlan plan, long moved)
            {
                bytes.addAndGet(moved);
                reported.countDown();
            }

            @Override
            public void failed(TransferPlan plan, String reason)
            {
                failure.compareAndSet(null, "plan " + plan.room() + " failed: " + reason);
                reported.countDown();
            }
        };
        for (TransferPlan plan : plans) {
            link.post(plan, listener);
        }
        if (!reported.await(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException(link + ": " + reported.getCount() + " of " + plans.size() + " plans were not reported within " + limit);
        }
        if (failure.get() != null) {
            throw new IllegalStateException(link + ": " + failure.get());
        }
        return bytes.get();
    }
}
