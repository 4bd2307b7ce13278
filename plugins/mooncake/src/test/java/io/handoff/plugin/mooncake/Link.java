package io.handoff.plugin.mooncake;

import io.handoff.spi.PluginSettings;

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
 * A prefill and a decode backend in one JVM, connected over one transport: the sender's source pool is
 * filled with a pattern, the receiver's pool with a canary.
 */
final class Link
        implements AutoCloseable
{
    final List<String> events = new CopyOnWriteArrayList<>();
    final TestContext senderContext;
    final MooncakeBackend sender;
    final MooncakeBackend receiver;
    final Pool source;
    final Pool destination;
    final TransferPeer peer;

    private Link(Transport transport, Path folder, WriteGuard guard, String... settings)
    {
        boolean shm = transport == Transport.SHM;
        // tcp: another host and an anonymous pool; shm: this host and a pool file.
        String receiverHost = "decode-host";
        String senderHost = shm ? receiverHost : "prefill-host";
        PluginSettings config = TestSettings.with(concat(new String[] {"transport", transport.id(), "max-frame-bytes", "4KiB"}, settings));
        senderContext = new TestContext(senderHost, folder, events);
        receiver = new MooncakeBackend(new TestContext(receiverHost, folder), MooncakeConfig.from(config));
        sender = new MooncakeBackend(senderContext, MooncakeConfig.from(config));
        destination = (shm ? Pool.mapped(folder.resolve("decode-pool")) : Pool.anonymous()).fillCanary();
        source = Pool.anonymous().fillSource();
        byte[] descriptor = receiver.expose(destination.regions(), destination.file(), guard);
        sender.registerSources(source.regions());
        peer = sender.connect(receiverHost, descriptor);
    }

    static Link open(Transport transport, Path folder, String... settings)
    {
        return new Link(transport, folder, WriteGuard.ALLOW_ALL, settings);
    }

    static Link open(Transport transport, Path folder, WriteGuard guard, String... settings)
    {
        return new Link(transport, folder, guard, settings);
    }

    TcpReceiver tcpReceiver()
    {
        return receiver.receiver();
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
