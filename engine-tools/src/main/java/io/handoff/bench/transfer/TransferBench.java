package io.handoff.bench.transfer;

import io.handoff.core.disagg.Disaggregation;
import io.handoff.core.kv.KvPool;
import io.handoff.core.kv.KvRegion;
import io.handoff.core.runtime.Engine;
import io.handoff.core.transfer.TransferLink;
import io.handoff.core.transfer.RankLayout;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.SliceMap;
import io.handoff.spi.transfer.TransferPlan;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;

import static java.util.Objects.requireNonNull;

/**
 * One measurement at one page size, the sender's side: this process opens the backend as a prefill does and fills
 * its source pool with the seeded pattern; a receiver process opens it as a decode does and exposes its pool; the
 * sender connects, runs a warm-up round of the memcpy reference and of the backend (so both destinations are touched
 * before anything is timed), then {@code rounds} timed rounds of each, interleaved, so both see the same load; then
 * it checks the receiver's pool holds exactly the pages sent. No figure leaves without that check.
 */
final class TransferBench
{
    static final Duration RECEIVER_START = Duration.ofMinutes(2);
    static final Duration ROUND_LIMIT = Duration.ofMinutes(10);

    /**
     * @param receiverCommand the command that starts the receiver for a payload shape
     * @param ucxEnvironment the UCX variables of the backend's transport, when ucx_perftest is its reference
     * @param ucxMessageCap the largest write the backend makes (bytes), or Long.MAX_VALUE
     */
    record Settings(int rounds, boolean scatter, long seed, Function<PayloadShape, List<String>> receiverCommand,
            Map<String, String> ucxEnvironment, String noUcxReason, long ucxMessageCap)
    {
        Settings
        {
            requireNonNull(receiverCommand, "receiverCommand is null");
            if (rounds < 1) {
                throw new IllegalArgumentException("--rounds must be at least 1, was " + rounds);
            }
        }
    }

    private final Engine engine;
    private final Settings settings;
    private final Consumer<String> progress;

    TransferBench(Engine engine, Settings settings, Consumer<String> progress)
    {
        this.engine = requireNonNull(engine, "engine is null");
        this.settings = requireNonNull(settings, "settings is null");
        this.progress = requireNonNull(progress, "progress is null");
    }

    TransferFigures measure(PayloadShape shape)
            throws InterruptedException, IOException
    {
        PageMapping mapping = settings.scatter() ? PageMapping.scattered(shape.pages(), settings.seed()) : PageMapping.contiguous(shape.pages());
        double[] gbps = new double[settings.rounds()];
        double[] memcpyGbps = new double[settings.rounds()];
        String backend;
        String transport;
        RoundPlans plans;
        try (StandaloneTransfer sender = StandaloneTransfer.open(Disaggregation.Role.PREFILL, engine.config(), engine.security(), engine.plugins(),
                shape.geometry(shape.senderRanks()), shape.pages(), shape.senderRanks());
                ReceiverProcess receiver = ReceiverProcess.start(settings.receiverCommand().apply(shape))) {
            backend = sender.backendId();
            PoolPattern.fill(sender.regions(), settings.seed());
            // the head-sliced pattern: each receiving rank gets its heads of every row, as between servers of these layouts
            RankLayout layout = shape.sliced()
                    ? RankLayout.of(shape.senderRanks(), PayloadShape.KV_HEADS, false, PayloadShape.PAGE_TOKENS, sender.regions())
                    : null;
            SliceMap slices = layout == null ? null : layout.slicesTo(layout.withRanks(shape.receiverRanks()));
            TransferLink link = sender.connect(receiver.descriptor(RECEIVER_START), slices);
            transport = link.transport();
            plans = new RoundPlans(mapping, sender.maxPagesPerPlan(), shape.regions(), shape.pageBytes());
            LinkRounds rounds = new LinkRounds(link, ROUND_LIMIT);
            try (KvPool scratch = shape.sliced() ? sender.mapScratchPool("memcpy-reference.pool", shape.geometry(shape.receiverRanks()), shape.receiverRanks())
                    : sender.wantsSharedFileMemory() ? sender.mapScratchPool("memcpy-reference.pool")
                    : KvPool.allocate(shape.geometry(), shape.pages())) {
                MemcpyReference memcpy = new MemcpyReference(sender.regions(), regions(scratch), slices);
                // warm-up: JIT, connections, and every destination page touched on both sides
                memcpy.copy(plans.plans(0));
                rounds.run(plans.plans(0));
                for (int round = 1; round <= settings.rounds(); round++) {
                    List<TransferPlan> roundPlans = plans.plans(round);
                    long start = System.nanoTime();
                    long copied = memcpy.copy(roundPlans);
                    memcpyGbps[round - 1] = copied / (double) (System.nanoTime() - start);
                    start = System.nanoTime();
                    long moved = rounds.run(roundPlans);
                    gbps[round - 1] = plans.roundBytes() / (double) (System.nanoTime() - start);
                    if (moved != plans.roundBytes() || copied != plans.roundBytes()) {
                        throw new IllegalStateException(sender.backendId() + " reported " + moved + " bytes moved in round " + round + " (memcpy "
                                + copied + "), the plans hold " + plans.roundBytes());
                    }
                }
                if (layout == null) {
                    verify(sender, regions(scratch), receiver, mapping);
                }
                else {
                    verifySliced(sender, layout, regions(scratch), receiver, mapping, shape);
                }
            }
        }
        progress.accept(String.format("%s over %s, %s pages: %.2f GB/s, memcpy %.2f GB/s", backend, transport, ByteSize.format(shape.pageBytes()),
                TransferFigures.median(gbps), TransferFigures.median(memcpyGbps)));
        long message = Math.min(plans.meanPieceBytes(), settings.ucxMessageCap());
        UcxPerftest.Result ucx = ucxPerftest(message, plans.roundBytes() * settings.rounds());
        return new TransferFigures(backend, transport, shape,
                settings.scatter(), gbps, memcpyGbps, ucx, message, plans.plansPerRound(), plans.planBytes());
    }

    /** The receiver's pool must hold, page for page, what the mapping says; so must the reference's. */
    private static void verify(StandaloneTransfer sender, List<MemoryRegion> reference, ReceiverProcess receiver, PageMapping mapping)
            throws InterruptedException
    {
        String expected = PoolPattern.expected(sender.regions(), mapping.sources());
        String copied = PoolPattern.checksums(reference);
        if (!copied.equals(expected)) {
            throw new IllegalStateException("the memcpy reference's destination does not hold the pages it copied ("
                    + PoolPattern.differences(expected, copied) + "): the bench itself is broken; no figure is reported");
        }
        String landed = receiver.checksums(RECEIVER_START);
        if (!landed.equals(expected)) {
            throw new IllegalStateException("the receiver's pool does not hold the pages " + sender.backendId() + " sent ("
                    + PoolPattern.differences(expected, landed) + " from what was sent): the transfer corrupted data; no figure is reported");
        }
    }

    /**
     * The head-sliced pattern: every destination page, read across the receiver's ranks in the canonical order, must be
     * its source page read across the sender's; so must the reference's.
     */
    private static void verifySliced(StandaloneTransfer sender, RankLayout layout, List<MemoryRegion> reference, ReceiverProcess receiver,
            PageMapping mapping, PayloadShape shape)
            throws InterruptedException
    {
        String expected = PoolPattern.expectedPages(layout, sender.regions(), mapping.sources());
        String copied = PoolPattern.pageChecksums(layout.withRanks(shape.receiverRanks()), reference, shape.pages());
        if (!copied.equals(expected)) {
            throw new IllegalStateException("the memcpy reference's destination does not hold the head slices it copied ("
                    + PoolPattern.differences(expected, copied).replace("regions", "pages") + "): the bench itself is broken; no figure is reported");
        }
        String landed = receiver.checksums(RECEIVER_START);
        if (!landed.equals(expected)) {
            throw new IllegalStateException("the receiver's pool does not hold the head slices " + sender.backendId() + " sent ("
                    + PoolPattern.differences(expected, landed).replace("regions", "pages") + " from what was sent): the transfer corrupted data; "
                    + "no figure is reported");
        }
    }

    private UcxPerftest.Result ucxPerftest(long messageBytes, long totalBytes)
            throws InterruptedException, IOException
    {
        if (settings.ucxEnvironment() == null) {
            return new UcxPerftest.Result(null, settings.noUcxReason());
        }
        var perftest = UcxPerftest.find();
        if (perftest.isEmpty()) {
            return new UcxPerftest.Result(null, "ucx_perftest is not installed (Debian package ucx-utils)");
        }
        UcxPerftest.Result result = perftest.get().measure(settings.ucxEnvironment(), messageBytes, totalBytes);
        if (result.gbps() != null) {
            progress.accept(String.format("ucx_perftest put %s with %s: %.2f GB/s", ByteSize.format(messageBytes), settings.ucxEnvironment(),
                    result.gbps()));
        }
        return result;
    }

    private static List<MemoryRegion> regions(KvPool pool)
    {
        List<MemoryRegion> regions = new ArrayList<>();
        for (KvRegion region : pool.regions()) {
            regions.add(new MemoryRegion(regions.size(), region.segment(), region.pageStride(), region.fileOffset()));
        }
        return regions;
    }
}
