package io.handoff.plugin.nixl;

import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferContext;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/** A transfer context that logs its hooks to an event list, and runs a test's action in afterPage (a fault point). */
final class TestContext
        implements TransferContext
{
    private final String hostId;
    private final List<String> events;
    private volatile BiConsumer<RoomKey, Integer> afterPageAction = (room, page) -> {};

    TestContext(String hostId, List<String> events)
    {
        this.hostId = hostId;
        this.events = events;
    }

    TestContext(String hostId)
    {
        this(hostId, new CopyOnWriteArrayList<>());
    }

    void onAfterPage(BiConsumer<RoomKey, Integer> action)
    {
        afterPageAction = action;
    }

    @Override
    public String hostId()
    {
        return hostId;
    }

    @Override
    public Path sharedMemoryDirectory()
    {
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    @Override
    public void beforeReadingChunk(RoomKey room, int chunk)
    {
        events.add("before " + room + " chunk " + chunk);
    }

    @Override
    public void afterPage(RoomKey room, int pageIndex)
    {
        events.add("after " + room + " page " + pageIndex);
        afterPageAction.accept(room, pageIndex);
    }
}
