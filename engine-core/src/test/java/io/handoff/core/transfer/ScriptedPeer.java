package io.handoff.core.transfer;

import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferFailure;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@link TransferPeer} test double: it records every call the link makes and, for each chunk, does what the test
 * scripted (by default what a well-behaved backend does: await the fence, "read" each page, report one stride per
 * page). It copies nothing; the link never touches bytes.
 */
final class ScriptedPeer
        implements TransferPeer
{
    static final long STRIDE = 64;
    // 8 pages on each side, one region.
    static final PageGeometry POOL = new PageGeometry(List.of(STRIDE), 8);

    /** What send does for one chunk; a TransferFailure it throws is reported through {@link PlanWork#failed}. */
    @FunctionalInterface
    interface Send
    {
        void send(PlanWork work)
                throws TransferFailure;
    }

    /** A backend that keeps the protocol: awaits the fence (a no-op when the core awaited it), reads, reports. */
    static final Send MOVES = work -> {
        work.awaitFence();
        TransferPlan plan = work.plan();
        for (int page = 0; page < plan.pages(); page++) {
            work.pageDone(plan.firstPageIndex() + page);
        }
        work.completed(plan.pages() * STRIDE);
    };

    /** Every plan handed to send, in order. */
    final List<TransferPlan> sent = new CopyOnWriteArrayList<>();
    /** The calls the link made, in order: "send ROOM chunk N", "unblock", "close". */
    final List<String> calls = new CopyOnWriteArrayList<>();
    final AtomicInteger unblocks = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    final CountDownLatch unblocked = new CountDownLatch(1);
    final CountDownLatch closed = new CountDownLatch(1);
    volatile String closedOn;
    private final AtomicInteger sending = new AtomicInteger();
    private final AtomicInteger mostSendingAtOnce = new AtomicInteger();
    private final Set<TransferCapability> capabilities;
    private final Map<Integer, Send> scripts = new ConcurrentHashMap<>();

    ScriptedPeer(TransferCapability... capabilities)
    {
        this.capabilities = Set.of(capabilities);
    }

    /** From now on, send of {@code chunk} does {@code send}. */
    void script(int chunk, Send send)
    {
        scripts.put(chunk, send);
    }

    /** Holds the send of {@code chunk} until the gate opens; it then does what a well-behaved backend does. */
    Gate gate(int chunk)
    {
        return gate(chunk, MOVES);
    }

    /** Holds the send of {@code chunk} until the gate opens, then does {@code then}. */
    Gate gate(int chunk, Send then)
    {
        Gate gate = new Gate();
        script(chunk, work -> {
            gate.pass();
            then.send(work);
        });
        return gate;
    }

    /** The most sends that ever ran at the same time. */
    int mostSendingAtOnce()
    {
        return mostSendingAtOnce.get();
    }

    @Override
    public String transport()
    {
        return "scripted";
    }

    @Override
    public PageGeometry receiverGeometry()
    {
        return POOL;
    }

    @Override
    public Set<TransferCapability> capabilities()
    {
        return capabilities;
    }

    @Override
    public void send(PlanWork work)
    {
        TransferPlan plan = work.plan();
        mostSendingAtOnce.accumulateAndGet(sending.incrementAndGet(), Math::max);
        try {
            sent.add(plan);
            calls.add("send " + plan.room() + " chunk " + plan.chunk());
            scripts.getOrDefault(plan.chunk(), MOVES).send(work);
        }
        catch (TransferFailure failure) {
            work.failed(failure);
        }
        finally {
            sending.decrementAndGet();
        }
    }

    @Override
    public void unblock()
    {
        calls.add("unblock");
        unblocks.incrementAndGet();
        unblocked.countDown();
    }

    @Override
    public void close()
    {
        calls.add("close");
        closedOn = Thread.currentThread().getName();
        closes.incrementAndGet();
        closed.countDown();
    }

    void awaitUnblocked()
            throws InterruptedException
    {
        assertThat(unblocked.await(30, TimeUnit.SECONDS)).as("the link unblocked the peer").isTrue();
    }

    void awaitClosed()
            throws InterruptedException
    {
        assertThat(closed.await(30, TimeUnit.SECONDS)).as("the link closed the peer").isTrue();
    }

    /** Holds the transfer thread inside a send until the test opens it. */
    static final class Gate
    {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);

        void pass()
        {
            entered.countDown();
            try {
                if (!opened.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the test never opened the gate");
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        void awaitEntered()
                throws InterruptedException
        {
            assertThat(entered.await(30, TimeUnit.SECONDS)).as("the transfer thread reached the gate").isTrue();
        }

        void open()
        {
            opened.countDown();
        }
    }
}
