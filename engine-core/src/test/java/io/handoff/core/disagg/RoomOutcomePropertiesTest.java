package io.handoff.core.disagg;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.ReceiverRoom;
import io.handoff.core.disagg.room.ReleasePolicy;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.disagg.room.RoomEffect;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Drain;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.MarkReceiving;
import io.handoff.core.disagg.room.RoomEffect.Post;
import io.handoff.core.disagg.room.RoomEffect.Quarantine;
import io.handoff.core.disagg.room.RoomEffect.Release;
import io.handoff.core.disagg.room.RoomEffect.ReleaseQuarantined;
import io.handoff.core.disagg.room.RoomEffect.ReleaseSources;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent;
import io.handoff.core.disagg.room.RoomEvent.Abort;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.Drained;
import io.handoff.core.disagg.room.RoomEvent.PeerFenced;
import io.handoff.core.disagg.room.RoomEvent.PeerLost;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.PlanCompleted;
import io.handoff.core.disagg.room.RoomEvent.PlanFailed;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.disagg.room.RoomEvent.Tick;
import io.handoff.core.disagg.room.RoomPhase;
import io.handoff.core.disagg.room.SenderRoom;
import io.handoff.core.kv.PagePool;
import io.handoff.core.kv.PageState;
import io.handoff.core.kv.ReleaseProof;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.FailureCause;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.statistics.Statistics;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random event sequences, legal or not, duplicated and reordered, against both rooms: every room ends in
 * at most one terminal outcome (exactly one once terminal), and the decode's page effects, executed on a
 * real {@link PagePool}, are always legal and release a quarantined page only on a proof its transport
 * allows, never because time passed.
 */
class RoomOutcomePropertiesTest
{
    private static final RoomKey ROOM = new RoomKey(5, 1);
    private static final RoomKey STALE = new RoomKey(5, 0);
    private static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(3), Duration.ofSeconds(3), Duration.ofSeconds(3));

    @Property(tries = 300, seed = "20250601")
    void senderEndsOnceNeverPostsAfterADrainAndReleasesSourcesOnce(@ForAll @Size(min = 8, max = 40) List<@IntRange(min = 0, max = 59) Integer> ops,
            @ForAll long seed)
    {
        Random random = new Random(seed);
        DeadlineClock.Manual clock = new DeadlineClock.Manual();
        // 6 pages of 4 tokens, 2 pages per plan
        SenderRoom room = new SenderRoom(ROOM, 24, 4, 2, DEADLINES, Optional.of(page -> page), clock.nanos());
        int[] destinations = {30, 31, 32, 40, 41, 42};
        List<TransferPlan> posted = new ArrayList<>();
        int nextChunk = 0;
        int outcomes = 0;
        int sourceReleases = 0;
        boolean drainEmitted = false;
        RoomPhase previous = room.phase();
        for (int op : ops) {
            // weighted towards progress, so that runs reach success as well as every kind of failure
            RoomEvent.ForSender event = switch (op) {
                case 0, 1, 2, 3, 4 -> new Received(new RoomRequest(ROOM, "r", 24, destinations));
                case 5 -> new Received(new RoomRequest(STALE, "r", 24, destinations));
                case 6, 7, 8, 9, 10, 11, 12, 13 -> switch (nextChunk) {
                    case 0, 1 -> ChunkForwarded.middle(nextChunk, nextChunk * 2, new int[] {nextChunk * 2, nextChunk * 2 + 1}, ProducerFence.DONE);
                    case 2 -> ChunkForwarded.last(nextChunk, 4, new int[] {4, 5}, ProducerFence.DONE, 77);
                    default -> new Tick();
                };
                case 26 -> posted.isEmpty() ? new Tick() : new PlanFailed(posted.get(random.nextInt(posted.size())), "boom");
                case 27 -> new Drained();
                case 28 -> new Abort("abort");
                case 29 -> new PeerLost("lost");
                case 30 -> new Received(new RoomFailed(random.nextBoolean() ? ROOM : STALE, FailureCause.ENGINE, "decode failed"));
                case 31 -> new Received(new DrainRequest(ROOM));
                case 32, 33, 34, 35, 36, 37, 38, 39 -> {
                    clock.advance(Duration.ofMillis(random.nextInt(1500)));
                    yield new Tick();
                }
                default -> posted.isEmpty() ? new Tick() : new PlanCompleted(posted.get(random.nextInt(posted.size())));
            };
            if (event instanceof ChunkForwarded) {
                nextChunk++;
            }
            for (RoomEffect.SenderEffect effect : room.on(event, clock.nanos())) {
                switch (effect) {
                    case Post(TransferPlan plan) -> {
                        assertThat(drainEmitted).as("a plan posted after a drain could land after the drain ack").isFalse();
                        assertThat(previous.isTerminal() && room.phase().isTerminal()).as("post by an ended room").isFalse();
                        posted.add(plan);
                    }
                    case Drain _ -> drainEmitted = true;
                    case Complete _, Fail _ -> outcomes++;
                    case ReleaseSources _ -> sourceReleases++;
                    case Send(DrainAck _) -> assertThat(room.phase().isTerminal()).as("drain ack from a live room").isTrue();
                    default -> {}
                }
            }
            assertThat(outcomes).isEqualTo(room.phase().isTerminal() ? 1 : 0);
            if (previous.isTerminal()) {
                assertThat(room.phase()).isEqualTo(previous);
            }
            assertThat(sourceReleases).isLessThanOrEqualTo(1);
            previous = room.phase();
        }
        Statistics.label("sender").collect(room.phase());
        Statistics.label("sender").coverage(coverage -> {
            coverage.check(RoomPhase.SUCCESS).percentage(p -> p > 5);
            coverage.check(RoomPhase.FAILED).percentage(p -> p > 20);
        });
    }

    @Property(tries = 300, seed = "20250602")
    void receiverEndsOnceAndItsPageEffectsAreLegalAndReleaseOnlyOnProof(@ForAll @Size(min = 8, max = 40) List<@IntRange(min = 0, max = 59) Integer> ops,
            @ForAll @IntRange(min = 0, max = 2) int policyIndex, @ForAll long seed)
    {
        Random random = new Random(seed);
        ReleasePolicy policy = ReleasePolicy.values()[policyIndex];
        DeadlineClock.Manual clock = new DeadlineClock.Manual();
        PagePool pool = new PagePool(16);
        // some other owner first, so the room's pages are not simply 0..n-1
        pool.allocate(3);
        int[] pages = pool.allocate(4).orElseThrow();
        ReceiverRoom room = new ReceiverRoom(ROOM, "r", 13, pages, "prefill", DEADLINES, Optional.of(page -> page * 7), clock.nanos());
        int[] checksums = {pages[0] * 7, pages[1] * 7, pages[2] * 7, pages[3] * 7};
        int outcomes = 0;
        RoomPhase previous = room.phase();
        for (int op : ops) {
            RoomEvent.ForReceiver event = switch (op) {
                case 0, 1, 2, 3 -> new PeerReady(policy);
                case 16, 17, 18, 19 -> new Received(new AuxRecord(ROOM, 9, 13, checksums));
                case 20 -> new Received(new AuxRecord(random.nextBoolean() ? STALE : ROOM, 9, 13, new int[] {1, 2, 3, 4}));
                case 21 -> new Abort("abort");
                case 22 -> new PeerLost("lost");
                case 23, 24 -> new PeerFenced("torn down");
                case 25, 26, 27 -> new Received(new DrainAck(random.nextBoolean() ? STALE : ROOM));
                case 28 -> new Received(new RoomFailed(ROOM, FailureCause.TRANSPORT_FAILURE, "prefill failed"));
                case 29 -> new Received(new ChunkDone(ROOM, 0, 3, 3));
                case 30, 31, 32, 33, 34, 35, 36, 37, 38, 39 -> {
                    clock.advance(Duration.ofMillis(random.nextInt(1500)));
                    yield new Tick();
                }
                default -> {
                    if (room.phase() == RoomPhase.BOOTSTRAPPING && random.nextBoolean()) {
                        yield new PeerReady(policy);
                    }
                    int first = random.nextInt(4);
                    yield new Received(new ChunkDone(random.nextInt(8) == 0 ? STALE : ROOM, first, first, 1 + random.nextInt(4 - first)));
                }
            };
            for (RoomEffect.ReceiverEffect effect : room.on(event, clock.nanos())) {
                switch (effect) {
                    case MarkReceiving(int[] p) -> pool.markReceiving(p);
                    case Commit(int[] p) -> pool.commitReceived(p);
                    case Release(int[] p) -> pool.release(p);
                    case Quarantine(int[] p) -> pool.quarantine(p);
                    case ReleaseQuarantined(int[] p, ReleaseProof proof) -> {
                        boolean allowed = switch (proof) {
                            case ReleaseProof.PeerFenced _ -> event instanceof PeerFenced;
                            case ReleaseProof.ReceiverValidated _ -> policy == ReleasePolicy.RELEASE_NOW;
                            case ReleaseProof.DrainAck _ -> policy == ReleasePolicy.AWAIT_DRAIN_ACK && event instanceof Received(DrainAck _);
                        };
                        assertThat(allowed).as(proof + " under " + policy + " on " + event).isTrue();
                        pool.releaseQuarantined(p, proof);
                    }
                    case Complete _, Fail _ -> outcomes++;
                    default -> {}
                }
            }
            pool.checkInvariants();
            assertThat(outcomes).isEqualTo(room.phase().isTerminal() ? 1 : 0);
            if (previous.isTerminal()) {
                assertThat(room.phase()).isEqualTo(previous);
            }
            previous = room.phase();
            PageState expected = switch (room.phase()) {
                case BOOTSTRAPPING -> PageState.OWNED;
                case WAITING_FOR_INPUT, TRANSFERRING -> PageState.RECEIVING;
                case SUCCESS -> PageState.OWNED;
                case FAILED -> room.isSettled() ? PageState.FREE : PageState.QUARANTINED;
            };
            for (int page : pages) {
                assertThat(pool.state(page)).as("page " + page + " of a " + room.phase() + " room").isEqualTo(expected);
            }
        }
        Statistics.label("receiver").collect(room.phase(), room.isSettled());
        Statistics.label("receiver").coverage(coverage -> {
            coverage.check(RoomPhase.SUCCESS, true).percentage(p -> p > 5);
            coverage.check(RoomPhase.FAILED, true).percentage(p -> p > 10);
            if (policy != ReleasePolicy.RELEASE_NOW) {
                coverage.check(RoomPhase.FAILED, false).count(c -> c > 0);
            }
        });
    }
}
