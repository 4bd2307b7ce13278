package io.handoff.testkit.transfer;

import io.handoff.core.transfer.TransferHooks;
import io.handoff.spi.transfer.RoomKey;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.IntPredicate;

import static java.util.Objects.requireNonNull;

/**
 * The core's hooks on a backend's data path ({@link TransferHooks}, as a {@link Link} passes them to the core's
 * {@link io.handoff.core.transfer.TransferLink}): logs each to an event list ("before ROOM chunk N", "after ROOM
 * page N") and runs a test's action in it, as the core's fault points would: park the thread, throw, look at memory.
 */
public final class RecordingHooks
        implements TransferHooks
{
    private final List<String> events;
    private volatile BiConsumer<RoomKey, Integer> beforeChunkAction = (room, chunk) -> {};
    private volatile BiConsumer<RoomKey, Integer> afterPageAction = (room, page) -> {};
    // The pages whose afterPage runs an action: a batching backend ends a batch at each.
    private volatile IntPredicate watched = page -> false;

    public RecordingHooks(List<String> events)
    {
        this.events = requireNonNull(events, "events is null");
    }

    public RecordingHooks()
    {
        this(new CopyOnWriteArrayList<>());
    }

    public List<String> events()
    {
        return events;
    }

    /** Runs {@code action(room, chunk)} in every beforeReadingChunk, after logging it. */
    public void onBeforeChunk(BiConsumer<RoomKey, Integer> action)
    {
        beforeChunkAction = requireNonNull(action, "action is null");
    }

    /** Runs {@code action(room, pageIndex)} in every afterPage, after logging it; every page is watched. */
    public void onAfterPage(BiConsumer<RoomKey, Integer> action)
    {
        onAfterPage(page -> true, action);
    }

    /**
     * Runs {@code action(room, pageIndex)} in every afterPage, after logging it, and tells a batching backend that
     * the pages {@code watched} accepts are the ones to end a batch at, so the action sees exactly the pages up to
     * its page written. An action that acts on another page sees whatever the backend's batch wrote.
     */
    public void onAfterPage(IntPredicate watched, BiConsumer<RoomKey, Integer> action)
    {
        this.watched = requireNonNull(watched, "watched is null");
        afterPageAction = requireNonNull(action, "action is null");
    }

    /**
     * Parks the transfer thread in the afterPage of room-relative page {@code pageIndex} (of any room) until the test
     * releases it, as a fault plan's "park" would; replaces any other afterPage action.
     */
    public Park parkAfterPage(int pageIndex)
    {
        Park park = new Park(pageIndex);
        onAfterPage(page -> page == pageIndex, (room, page) -> {
            if (page == pageIndex) {
                park.hold();
            }
        });
        return park;
    }

    /** A transfer thread held in a hook; every wait is bounded, so a test that forgets to release still ends. */
    public static final class Park
    {
        private final int pageIndex;
        private final CountDownLatch parked = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        private Park(int pageIndex)
        {
            this.pageIndex = pageIndex;
        }

        /** Blocks until the transfer thread is parked. */
        public void awaitParked()
                throws InterruptedException
        {
            if (!parked.await(30, TimeUnit.SECONDS)) {
                throw new AssertionError("the transfer thread never reached page " + pageIndex);
            }
        }

        public void release()
        {
            released.countDown();
        }

        private void hold()
        {
            parked.countDown();
            try {
                if (!released.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the test never released the transfer thread parked after page " + pageIndex);
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while parked after page " + pageIndex, e);
            }
        }
    }

    @Override
    public void beforeReadingChunk(RoomKey room, int chunk)
    {
        events.add("before " + room + " chunk " + chunk);
        beforeChunkAction.accept(room, chunk);
    }

    @Override
    public void afterPage(RoomKey room, int pageIndex)
    {
        events.add("after " + room + " page " + pageIndex);
        afterPageAction.accept(room, pageIndex);
    }

    @Override
    public boolean watchesPage(RoomKey room, int pageIndex)
    {
        return watched.test(pageIndex);
    }
}
