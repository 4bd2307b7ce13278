package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A prefill and a decode nixl backend in one JVM, opened through the provider with the UCX transports {@code tls}
 * and connected: the sender's pool holds pattern 0, the receiver's pool the canary.
 */
final class Link
        implements AutoCloseable
{
    static final String DECODE_HOST = "decode-host";

    final List<String> events = new CopyOnWriteArrayList<>();
    final TestContext senderContext;
    final TransferBackend sender;
    final TransferBackend receiver;
    final Pool source;
    final Pool destination;
    final TransferPeer peer;

    private Link(String tls, String... settings)
    {
        PluginSettings config = TestSettings.with(concat(new String[] {"tls", tls}, settings));
        senderContext = new TestContext("prefill-host", events);
        receiver = new NixlProvider().open(new TestContext(DECODE_HOST), config);
        sender = new NixlProvider().open(senderContext, config);
        destination = Pool.allocate().fillCanary();
        source = Pool.allocate().fill(0);
        byte[] descriptor = receiver.expose(destination.regions(), null, WriteGuard.ALLOW_ALL);
        sender.registerSources(source.regions());
        peer = sender.connect(DECODE_HOST, descriptor);
    }

    static Link open(String tls, String... settings)
    {
        return new Link(tls, settings);
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

    private static String[] concat(String[] first, String[] second)
    {
        String[] all = new String[first.length + second.length];
        System.arraycopy(first, 0, all, 0, first.length);
        System.arraycopy(second, 0, all, first.length, second.length);
        return all;
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
