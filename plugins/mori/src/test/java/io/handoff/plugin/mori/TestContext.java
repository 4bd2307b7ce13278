package io.handoff.plugin.mori;

import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferContext;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/**
 * A transfer context that logs its hooks to a shared event list and runs a test's action in each hook, as the
 * core's fault points would (park the thread, throw, look at memory).
 */
final class TestContext
        implements TransferContext
{
    private final String hostId;
    private final Path sharedMemoryDirectory;
    private final List<String> events;
    private volatile BiConsumer<RoomKey, Integer> beforeChunkAction = (room, chunk) -> {};
    private volatile BiConsumer<RoomKey, Integer> afterPageAction = (room, page) -> {};

    TestContext(String hostId, Path sharedMemoryDirectory, List<String> events)
    {
        this.hostId = hostId;
        this.sharedMemoryDirectory = sharedMemoryDirectory;
        this.events = events;
    }

    TestContext(String hostId, Path sharedMemoryDirectory)
    {
        this(hostId, sharedMemoryDirectory, new CopyOnWriteArrayList<>());
    }

    void onBeforeChunk(BiConsumer<RoomKey, Integer> action)
    {
        beforeChunkAction = action;
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
        return sharedMemoryDirectory;
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
}
