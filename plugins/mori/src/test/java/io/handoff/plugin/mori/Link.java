package io.handoff.plugin.mori;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A prefill and a decode mori backend in one JVM on one host: the decode's pool is a shared file filled with
 * a canary, the prefill's an anonymous pool holding forward {@link #FIRST_FORWARD}'s pages; the prefill is
 * connected to the decode.
 */
final class Link
        implements AutoCloseable
{
    static final String HOST = "host-a";
    static final int FIRST_FORWARD = 1;

    final List<String> events = new CopyOnWriteArrayList<>();
    final TestContext senderContext;
    final MoriBackend sender;
    final MoriBackend receiver;
    final Pool source;
    final Pool destination;
    final TransferPeer peer;

    private Link(Path folder, String... settings)
    {
        MoriConfig config = MoriConfig.from(TestSettings.with(settings));
        RdmaTransport.Probe rdma = RdmaTransport.probe();
        senderContext = new TestContext(HOST, folder, events);
        receiver = new MoriBackend(new TestContext(HOST, folder), config, rdma);
        sender = new MoriBackend(senderContext, config, rdma);
        destination = Pool.mapped(folder.resolve("decode-pool")).fillCanary();
        source = Pool.anonymous().fillSource(FIRST_FORWARD);
        byte[] descriptor = receiver.expose(destination.regions(), destination.file(), WriteGuard.ALLOW_ALL);
        sender.registerSources(source.regions());
        peer = sender.connect(HOST, descriptor);
    }

    /** A link with the defaults of reference.conf, overridden by {@code key, value, ...}. */
    static Link open(Path folder, String... settings)
    {
        return new Link(folder, settings);
    }

    Outcome post(TransferPlan plan)
    {
        Outcome outcome = new Outcome(events);
        peer.post(plan, outcome);
        return outcome;
    }

    /** A plan of runs {@code {src, dst, length}}. */
    static TransferPlan plan(RoomKey room, int chunk, int firstPageIndex, ProducerFence fence, int[]... runs)
    {
        int[] src = new int[runs.length];
        int[] dst = new int[runs.length];
        int[] length = new int[runs.length];
        for (int i = 0; i < runs.length; i++) {
            src[i] = runs[i][0];
            dst[i] = runs[i][1];
            length[i] = runs[i][2];
        }
        return new TransferPlan(room, chunk, firstPageIndex, src, dst, length, fence);
    }

    /** Destination page to source page, for every page the plans copy. */
    static Map<Integer, Integer> pagesOf(TransferPlan... plans)
    {
        Map<Integer, Integer> pages = new HashMap<>();
        for (TransferPlan plan : plans) {
            for (int run = 0; run < plan.runs(); run++) {
                for (int i = 0; i < plan.runLengths()[run]; i++) {
                    pages.put(plan.dstPages()[run] + i, plan.srcPages()[run] + i);
                }
            }
        }
        return pages;
    }

    static long bytesOf(TransferPlan plan)
    {
        long perPage = 0;
        for (long stride : Pool.STRIDES) {
            perPage += stride;
        }
        return plan.pages() * perPage;
    }

    @Override
    public void close()
    {
        sender.close();
        receiver.close();
        source.close();
        destination.close();
    }
}
