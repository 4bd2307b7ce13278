package io.handoff.core.disagg.peer;

import io.handoff.core.disagg.control.Compatibility;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.control.ControlChannelTest;
import io.handoff.core.disagg.control.ControlMessage.RoomMessage;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.EarlySend;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.transfer.PlanListener;
import io.handoff.core.transfer.TransferHooks;
import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.transfer.MemoryRegion;
import io.handoff.spi.transfer.PageGeometry;
import io.handoff.spi.transfer.PlanWork;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.spi.transfer.WriteGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill's drain of a room finds the room's transfer link even after the decode's connection closed: the plan
 * the backend still holds may be reading the prefill's source pages, so the drain (which frees them) waits for its
 * outcome instead of completing at once. Real control connections on loopback; the backend parks its send on a latch.
 */
class PrefillToDecodeLinksDrainTest
{
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Compatibility HERE = Compatibility.of("tiny-mla", "seed:42", KvLayout.MLA, new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16));
    private static final PageGeometry POOL = new PageGeometry(List.of(64L), 8);
    private static final RoomKey ROOM = new RoomKey(600, 0);

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final List<AutoCloseable> resources = new ArrayList<>();
    private final CountDownLatch sending = new CountDownLatch(1);
    private final CountDownLatch releaseSend = new CountDownLatch(1);
    private final CompletableFuture<Void> roomRequested = new CompletableFuture<>();
    private final CompletableFuture<String> lost = new CompletableFuture<>();

    @AfterEach
    void close()
            throws Exception
    {
        releaseSend.countDown();
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
    }

    @Test
    void aDrainAfterTheConnectionClosedWaitsForThePlanTheBackendStillHolds()
            throws Exception
    {
        PrefillToDecodeLinks prefill = prefill();
        Heard heard = new Heard();
        DecodeToPrefillLinks<String> decode = decode(heard);
        DecodeToPrefillLinks.Link<String> link = decode.to(prefill.controlAddress());
        decode.join(link, "room");
        heard.ready.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(link.send(new RoomRequest(ROOM, "rid", 16, new int[] {0}))).isTrue();
        roomRequested.get(WAIT.toSeconds(), TimeUnit.SECONDS);

        TransferLink transfers = prefill.link(ROOM).orElseThrow();
        CompletableFuture<String> outcome = new CompletableFuture<>();
        transfers.post(new TransferPlan(ROOM, 0, 0, new int[] {1}, new int[] {0}, new int[] {1}, ProducerFence.DONE), new PlanListener()
        {
            @Override
            public void completed(TransferPlan plan, long bytes)
            {
                outcome.complete("completed");
            }

            @Override
            public void failed(TransferPlan plan, String reason)
            {
                outcome.complete("failed: " + reason);
            }
        });
        assertThat(sending.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        // the decode goes away while the backend holds the plan
        decode.close();
        lost.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        Optional<TransferLink> stillKnown = prefill.link(ROOM);
        assertThat(stillKnown).as("the room's link outlives its connection").containsSame(transfers);
        CompletableFuture<Void> drained = stillKnown.get().drain(ROOM);
        assertThat(drained).as("a plan may still be reading the source pages").isNotDone();
        assertThat(outcome).isNotDone();

        releaseSend.countDown();
        drained.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(outcome.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("completed");

        prefill.forget(ROOM);
        assertThat(prefill.link(ROOM)).isEmpty();
    }

    /** What the decode's one room hears. */
    private static final class Heard
            implements DecodeToPrefillLinks.Rooms<String>
    {
        final CompletableFuture<ReleasePolicy> ready = new CompletableFuture<>();

        @Override
        public void received(DecodeToPrefillLinks.Link<String> from, RoomMessage message)
        {
        }

        @Override
        public void ready(String room, ReleasePolicy policy)
        {
            ready.complete(policy);
        }

        @Override
        public void lost(String room, io.handoff.trace.FailureCause cause, String reason)
        {
        }

        @Override
        public void fenced(String room, String how)
        {
        }

        @Override
        public List<String> on(DecodeToPrefillLinks.Link<String> link)
        {
            return List.of();
        }
    }

    /** A connection whose sends park until the test releases them, then complete. */
    private final class ParkingPeer
            implements TransferPeer
    {
        @Override
        public String transport()
        {
            return "parking";
        }

        @Override
        public PageGeometry receiverGeometry()
        {
            return POOL;
        }

        @Override
        public Set<TransferCapability> capabilities()
        {
            return Set.of(TransferCapability.DRAIN_ACK, TransferCapability.ONE_SIDED);
        }

        @Override
        public void send(PlanWork work)
        {
            sending.countDown();
            try {
                releaseSend.await();
                work.reading();
                work.completed(64);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                work.failed(new io.handoff.spi.transfer.TransferFailure("interrupted", false));
            }
            catch (io.handoff.spi.transfer.TransferFailure e) {
                work.failed(e);
            }
        }

        @Override
        public void close()
        {
        }
    }

    private TransferBackend backend()
    {
        return new TransferBackend()
        {
            @Override
            public byte[] expose(List<MemoryRegion> regions, Path sharedFile, WriteGuard guard)
            {
                return new byte[] {1};
            }

            @Override
            public void registerSources(List<MemoryRegion> regions)
            {
            }

            @Override
            public TransferPeer connect(String peerHostId, byte[] descriptor)
            {
                return new ParkingPeer();
            }

            @Override
            public void close()
            {
            }
        };
    }

    private static DisaggregationConfig config()
    {
        return new DisaggregationConfig("parking", "off", "127.0.0.1", 0, ControlChannelTest.LIVENESS, WAIT, RoomDeadlines.DEFAULT, 8,
                TransferLink.Timeouts.DEFAULT, false);
    }

    private PrefillToDecodeLinks prefill()
            throws Exception
    {
        PrefillToDecodeLinks links = new PrefillToDecodeLinks(config(), HERE, "parking", backend(), new EarlySend("off", false, "off"), POOL, TransferHooks.NONE,
                clock, new TransferStats(), new PrefillToDecodeLinks.Rooms()
                {
                    @Override
                    public void received(ControlChannel channel, RoomMessage message)
                    {
                        if (message instanceof RoomRequest) {
                            roomRequested.complete(null);
                        }
                    }

                    @Override
                    public void lost(ControlChannel channel, String reason)
                    {
                        lost.complete(reason);
                    }
                });
        resources.add(links);
        return links;
    }

    private DecodeToPrefillLinks<String> decode(Heard heard)
    {
        DecodeToPrefillLinks<String> links = new DecodeToPrefillLinks<>(config(), HERE, "parking", backend(), List.of(), null, (room, page, count) -> null, clock,
                new TransferStats(), heard);
        resources.add(links);
        return links;
    }
}
