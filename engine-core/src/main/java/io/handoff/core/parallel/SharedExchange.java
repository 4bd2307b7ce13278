package io.handoff.core.parallel;

import io.handoff.core.model.parallel.Pieces;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The collectives of ranks on one host through a shared file mapping (in {@code /dev/shm} where there is one): each rank
 * writes its pieces into its own slot and publishes the call's sequence number; the others read them straight from
 * there. Two slots per rank alternate by call, and a rank writes call k only after every rank has finished call k - 2
 * (each publishes how far it has read), so no value is overwritten while someone may still read it. A call whose
 * pieces do not fit a slot goes over the links instead; every rank decides that alike from the same pieces.
 *
 * <p>Waiting spins briefly and then yields, checking that the group has not failed: the leader marks the mapping failed
 * when it loses a rank or closes, and a rank also watches the leader's process.
 */
final class SharedExchange
        implements AutoCloseable
{
    static final long SLOT_BYTES = 16L << 20;
    private static final long LINE = 128;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int SPINS = 1 << 14;

    private final Arena arena;
    private final MemorySegment memory;
    private final Path file;
    private final boolean owner;
    private final int ranks;
    private final int rank;
    private final long failedAt;
    private final long dataAt;
    private long calls;

    private SharedExchange(Arena arena, MemorySegment memory, Path file, boolean owner, int ranks, int rank)
    {
        this.arena = arena;
        this.memory = memory;
        this.file = file;
        this.owner = owner;
        this.ranks = ranks;
        this.rank = rank;
        this.failedAt = ranks * LINE * 2;
        this.dataAt = align(failedAt + LINE);
    }

    static long bytes(int ranks)
    {
        return align(ranks * LINE * 2 + LINE) + 2L * ranks * SLOT_BYTES;
    }

    private static long align(long bytes)
    {
        return (bytes + 4095) & ~4095L;
    }

    /** The leader's mapping: a new file readable by this user only, in {@code /dev/shm} when it has room, else the temp folder. */
    static SharedExchange create(int ranks)
            throws IOException
    {
        long bytes = bytes(ranks);
        Path dir = Path.of("/dev/shm");
        if (!Files.isDirectory(dir) || !Files.isWritable(dir) || Files.getFileStore(dir).getUsableSpace() < 2 * bytes) {
            dir = Path.of(System.getProperty("java.io.tmpdir"));
        }
        Path file = Files.createTempFile(dir, "handoff-tp-", ".shm", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            return map(file, ranks, 0, true);
        }
        catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /** A rank's view of the leader's mapping at {@code file}, which must have the size {@code ranks} ranks need. */
    static SharedExchange open(Path file, int ranks, int rank)
            throws IOException
    {
        if (Files.size(file) != bytes(ranks)) {
            throw new IOException("the shared mapping " + file + " is " + Files.size(file) + " bytes, " + ranks + " ranks need " + bytes(ranks));
        }
        return map(file, ranks, rank, false);
    }

    private static SharedExchange map(Path file, int ranks, int rank, boolean owner)
            throws IOException
    {
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (owner) {
                channel.truncate(0);
                channel.write(java.nio.ByteBuffer.allocate(1), bytes(ranks) - 1);
            }
            MemorySegment memory = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes(ranks), arena);
            return new SharedExchange(arena, memory, file, owner, ranks, rank);
        }
        catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    Path file()
    {
        return file;
    }

    /** Whether a call with these pieces goes through the mapping: every rank's pieces fit its slot. */
    boolean fits(Pieces pieces)
    {
        for (int r = 0; r < ranks; r++) {
            if (4L * pieces.floats(r) > SLOT_BYTES) {
                return false;
            }
        }
        return true;
    }

    /**
     * One collective: this rank's pieces published, then, when {@code readOthers} (every rank in an all-gather, the leader
     * alone in a gather), every other rank's pieces copied into {@code buf}. {@code waiting} says
     * false once waiting for a rank can no longer end (it or the leader is gone, or it is past the step's deadline); the
     * call then throws, naming that rank.
     */
    void exchange(float[] buf, Pieces pieces, boolean readOthers, Waiting waiting)
            throws GroupFailedException
    {
        long call = ++calls;
        int parity = (int) (call & 1);
        // the slot this call writes was last read in call - 2: wait until every rank is past it
        for (int r = 0; r < ranks; r++) {
            if (r != rank) {
                await(r, readAt(r), call - 2, waiting);
            }
        }
        long slot = slotAt(rank, parity);
        int[] ranges = pieces.ranges(rank);
        long at = slot;
        for (int i = 0; i < ranges.length; i += 2) {
            MemorySegment.copy(buf, ranges[i], memory, ValueLayout.JAVA_FLOAT, at, ranges[i + 1]);
            at += 4L * ranges[i + 1];
        }
        LONG.setRelease(memory, writeAt(rank), call);
        if (readOthers) {
            for (int r = 0; r < ranks; r++) {
                if (r == rank) {
                    continue;
                }
                await(r, writeAt(r), call, waiting);
                int[] theirs = pieces.ranges(r);
                long from = slotAt(r, parity);
                for (int i = 0; i < theirs.length; i += 2) {
                    MemorySegment.copy(memory, ValueLayout.JAVA_FLOAT, from, buf, theirs[i], theirs[i + 1]);
                    from += 4L * theirs[i + 1];
                }
            }
        }
        LONG.setRelease(memory, readAt(rank), call);
    }

    private void await(int r, long at, long value, Waiting waiting)
            throws GroupFailedException
    {
        long start = 0;
        for (int spin = 0; (long) LONG.getAcquire(memory, at) < value; spin++) {
            if (spin < SPINS) {
                Thread.onSpinWait();
                continue;
            }
            if (start == 0) {
                start = System.nanoTime();
            }
            if ((long) LONG.getAcquire(memory, failedAt) != 0 || !waiting.stillWaitFor(r, System.nanoTime() - start)) {
                throw new GroupFailedException(r);
            }
            Thread.yield();
        }
    }

    /** Whether to go on waiting for rank {@code rank}, after {@code nanos} of waiting. */
    @FunctionalInterface
    interface Waiting
    {
        boolean stillWaitFor(int rank, long nanos);
    }

    /** Marks the group failed: every rank waiting in a call stops waiting. */
    void fail()
    {
        LONG.setRelease(memory, failedAt, 1L);
    }

    private long writeAt(int r)
    {
        return r * LINE * 2;
    }

    private long readAt(int r)
    {
        return r * LINE * 2 + LINE;
    }

    private long slotAt(int r, int parity)
    {
        return dataAt + (2L * r + parity) * SLOT_BYTES;
    }

    @Override
    public void close()
    {
        if (owner) {
            fail();
        }
        arena.close();
        if (owner) {
            try {
                Files.deleteIfExists(file);
            }
            catch (IOException ignored) {
                // a temp file left behind is the operating system's to clean
            }
        }
    }

    /** The group failed while this rank waited; the caller says which rank, if it knows. */
    static final class GroupFailedException
            extends Exception
    {
        private final int rank;

        GroupFailedException(int rank)
        {
            super("the tensor-parallel group failed while waiting for rank " + rank, null, false, false);
            this.rank = rank;
        }

        int rank()
        {
            return rank;
        }
    }
}
