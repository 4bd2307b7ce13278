package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage;
import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.RoomEvent.ChunkForwarded;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.RequestTimeline;
import io.handoff.trace.TimelineEvent;
import io.handoff.trace.Timelines;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.IntUnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/** What real room machines' transitions write into their request's timeline, through the one call each handoff makes per transition. */
class RoomTraceTest
{
    private static final RoomKey ROOM = new RoomKey(11, 3);
    private static final RoomDeadlines DEADLINES = new RoomDeadlines(Duration.ofSeconds(10), Duration.ofSeconds(20), Duration.ofSeconds(5));
    private static final int PROMPT = 14;
    private static final int[] PAGES = {40, 41, 42, 7};
    private static final IntUnaryOperator CHECKSUM = page -> page * 31 + 5;

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();
    private final Timelines timelines = new Timelines(4);
    private final RoomTrace trace = new RoomTrace(timelines, 1024, true);

    private List<String> entries(String rid)
    {
        return timelines.find(rid).orElseThrow().snapshot().entries().stream()
                .map(entry -> (entry.event().label() + " " + entry.detail()).strip()).toList();
    }

    private ReceiverRoom receiver(String rid)
    {
        timelines.begin(rid, TimelineEvent.QUEUED, "");
        return new ReceiverRoom(ROOM, rid, PROMPT, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM), clock.nanos());
    }

    private void on(String rid, ReceiverRoom room, RoomEvent.ForReceiver event)
    {
        trace.receiver(rid, event, room.on(event, clock.nanos()));
    }

    private static int[] checksums()
    {
        int[] sums = new int[PAGES.length];
        for (int i = 0; i < PAGES.length; i++) {
            sums[i] = CHECKSUM.applyAsInt(PAGES[i]);
        }
        return sums;
    }

    @Test
    void aDecodeRecordsBootstrapEachLandedChunkTheVerifiedChecksumsAndTheCommit()
    {
        ReceiverRoom room = receiver("ok");
        on("ok", room, new PeerReady(ReleasePolicy.AWAIT_DRAIN_ACK));
        on("ok", room, new Received(new ChunkDone(ROOM, 0, 0, 3)));
        on("ok", room, new Received(new ChunkDone(ROOM, 0, 0, 3)));
        on("ok", room, new Received(new ChunkDone(ROOM, 1, 3, 1)));
        on("ok", room, new Received(new AuxRecord(ROOM, 99, PROMPT, checksums())));

        assertThat(entries("ok")).containsExactly("queued",
                "bootstrap room=" + ROOM + " pages_advertised=4 release=AWAIT_DRAIN_ACK",
                // the duplicate chunk 0 was ignored by the room, and so by the timeline
                "chunk_landed chunk=0 pages=3 bytes=3072",
                "chunk_landed chunk=1 pages=1 bytes=1024",
                "checksums_verified pages=4",
                "commit pages=4");
    }

    @Test
    void aMismatchIsItsOwnEventAndTheQuarantineAndItsProofFollow()
    {
        ReceiverRoom room = receiver("bad");
        on("bad", room, new PeerReady(ReleasePolicy.AWAIT_DRAIN_ACK));
        on("bad", room, new Received(new ChunkDone(ROOM, 0, 0, 4)));
        int[] sent = checksums();
        sent[2] ^= 1;
        on("bad", room, new Received(new AuxRecord(ROOM, 99, PROMPT, sent)));
        on("bad", room, new Received(new ControlMessage.DrainAck(ROOM)));

        List<String> entries = entries("bad");
        assertThat(entries.get(3)).startsWith("checksum_mismatch error=KV checksum mismatch on room page 2 (decode page 42)");
        assertThat(entries.subList(4, entries.size())).containsExactly("quarantined pages=4",
                "quarantine_released pages=4 proof=" + new io.handoff.core.kv.ReleaseProof.DrainAck(ROOM.roomId(), ROOM.generation(), 0));
        assertThat(entries).noneMatch(entry -> entry.startsWith("commit") || entry.startsWith("checksums_verified"));
    }

    @Test
    void aPrefillRecordsTheDecodesPagesEachPlanPostedAndLandedAndTheAuxRecord()
    {
        timelines.begin("p", TimelineEvent.QUEUED, "");
        SenderRoom room = new SenderRoom(ROOM, PROMPT, 4, 4, DEADLINES, Optional.of(CHECKSUM), clock.nanos());
        List<RoomEffect.SenderEffect> posted = trace.sender("p", new ChunkForwarded(0, 0, PAGES, ProducerFence.DONE, true, 99),
                room.on(ChunkForwarded.last(0, 0, PAGES, ProducerFence.DONE, 99), clock.nanos()));
        assertThat(posted).isEmpty();
        RoomEvent.ForSender request = new Received(new RoomRequest(ROOM, "p", PROMPT, new int[] {1, 2, 3, 4}));
        List<RoomEffect.SenderEffect> effects = trace.sender("p", request, room.on(request, clock.nanos()));
        TransferPlan plan = effects.stream().filter(RoomEffect.Post.class::isInstance).map(e -> ((RoomEffect.Post) e).plan()).findFirst().orElseThrow();
        RoomEvent.ForSender completed = new RoomEvent.PlanCompleted(plan);
        trace.sender("p", completed, room.on(completed, clock.nanos()));

        assertThat(entries("p")).containsExactly("queued",
                "bootstrap room=" + ROOM + " decode_pages=4",
                "plan_posted chunk=0 pages=4 runs=" + plan.runs() + " bytes=4096",
                "plan_landed chunk=0 pages=4 runs=" + plan.runs() + " bytes=4096",
                "aux_sent first_token=99 checksums=4");
    }

    @Test
    void withChecksumsOffTheCommitSaysItWasUnverified()
    {
        RoomTrace unchecked = new RoomTrace(timelines, 1024, false);
        timelines.begin("off", TimelineEvent.QUEUED, "");
        ReceiverRoom room = new ReceiverRoom(ROOM, "off", PROMPT, PAGES, "p", DEADLINES, Optional.empty(), clock.nanos());
        for (RoomEvent.ForReceiver event : List.of(new PeerReady(ReleasePolicy.RELEASE_NOW), new Received(new ChunkDone(ROOM, 0, 0, 4)),
                new Received(new AuxRecord(ROOM, 99, PROMPT, new int[0])))) {
            unchecked.receiver("off", event, room.on(event, clock.nanos()));
        }

        assertThat(entries("off")).endsWith("chunk_landed chunk=0 pages=4 bytes=4096", "commit pages=4 unverified (kv-fidelity off)");
    }

    @Test
    void aRequestWhoseTimelineIsNotKeptCostsNothingAndChangesNoEffect()
    {
        ReceiverRoom room = new ReceiverRoom(ROOM, "gone", PROMPT, PAGES, "p", DEADLINES, Optional.of(CHECKSUM), clock.nanos());
        List<RoomEffect.ReceiverEffect> effects = room.on(new PeerReady(ReleasePolicy.RELEASE_NOW), clock.nanos());

        assertThat(trace.receiver("gone", new PeerReady(ReleasePolicy.RELEASE_NOW), effects)).isSameAs(effects);
        assertThat(timelines.find("gone")).isEmpty();
        assertThat(RequestTimeline.NONE.snapshot().entries()).isEmpty();
    }
}
