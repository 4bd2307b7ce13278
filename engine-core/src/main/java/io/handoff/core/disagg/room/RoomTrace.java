package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.trace.RequestTimeline;
import io.handoff.trace.TimelineEvent;
import io.handoff.trace.Timelines;

import java.util.List;

import static java.util.Objects.requireNonNull;

/**
 * Writes what a room's transition did into its request's timeline: read off the event and the effects the room
 * machine returned, so the machines stay free of I/O and the handoffs need one call per transition. A transition
 * the machine ignored records nothing.
 */
public final class RoomTrace
{
    public static final RoomTrace NONE = new RoomTrace(Timelines.NONE, 0, false);

    private final Timelines timelines;
    private final long bytesPerPage;
    private final boolean checksums;

    /** @param checksums whether this node verifies page checksums ({@code handoff.debug.kv-fidelity}) */
    public RoomTrace(Timelines timelines, long bytesPerPage, boolean checksums)
    {
        this.timelines = requireNonNull(timelines, "timelines is null");
        this.bytesPerPage = bytesPerPage;
        this.checksums = checksums;
    }

    /** Prefill: records {@code event} and {@code effects} of request {@code rid}'s room; returns the effects. */
    public <E extends RoomEffect> List<E> sender(String rid, RoomEvent.ForSender event, List<E> effects)
    {
        RequestTimeline timeline = timelines.of(rid);
        if (timeline == RequestTimeline.NONE || ignored(effects)) {
            return effects;
        }
        switch (event) {
            case RoomEvent.Received received when received.message() instanceof RoomRequest request ->
                    timeline.record(TimelineEvent.BOOTSTRAP, "room=" + request.room() + " decode_pages=" + request.destinationPages().length);
            case RoomEvent.PlanCompleted completed -> timeline.record(TimelineEvent.PLAN_LANDED, plan(completed.plan()));
            case RoomEvent.PlanFailed failed -> timeline.record(TimelineEvent.PLAN_FAILED, plan(failed.plan()) + " error=" + failed.reason());
            default -> { }
        }
        for (E effect : effects) {
            switch (effect) {
                case RoomEffect.Post post ->
                        timeline.record(TimelineEvent.PLAN_POSTED, plan(post.plan()) + (post.plan().fence().isDone() ? "" : " early"));
                case RoomEffect.Send send when send.message() instanceof AuxRecord aux ->
                        timeline.record(TimelineEvent.AUX_SENT, "first_token=" + aux.firstToken() + " checksums=" + aux.pageChecksums().length);
                case RoomEffect.Fail fail -> timeline.record(TimelineEvent.ROOM_FAILED, "error=" + fail.reason());
                default -> { }
            }
        }
        return effects;
    }

    /** Decode: records {@code event} and {@code effects} of request {@code rid}'s room; returns the effects. */
    public <E extends RoomEffect> List<E> receiver(String rid, RoomEvent.ForReceiver event, List<E> effects)
    {
        RequestTimeline timeline = timelines.of(rid);
        if (timeline == RequestTimeline.NONE || ignored(effects)) {
            return effects;
        }
        if (event instanceof RoomEvent.Received received && received.message() instanceof ChunkDone chunk) {
            timeline.record(TimelineEvent.CHUNK_LANDED, "chunk=" + chunk.chunk() + " pages=" + chunk.pageCount() + " bytes=" + chunk.pageCount() * bytesPerPage);
        }
        for (E effect : effects) {
            switch (effect) {
                case RoomEffect.Send send when send.message() instanceof RoomRequest request -> {
                    String policy = event instanceof RoomEvent.PeerReady ready ? " release=" + ready.releasePolicy() : "";
                    timeline.record(TimelineEvent.BOOTSTRAP, "room=" + request.room() + " pages_advertised=" + request.destinationPages().length + policy);
                }
                case RoomEffect.Commit commit -> {
                    int pages = commit.pages().length;
                    if (checksums) {
                        timeline.record(TimelineEvent.CHECKSUMS_VERIFIED, "pages=" + pages);
                    }
                    timeline.record(TimelineEvent.COMMIT, "pages=" + pages + (checksums ? "" : " unverified (kv-fidelity off)"));
                }
                // the receiver's own words for a failed check (ReceiverRoom.validate)
                case RoomEffect.Fail fail -> timeline.record(fail.reason().contains("checksum mismatch") ? TimelineEvent.CHECKSUM_MISMATCH
                        : TimelineEvent.ROOM_FAILED, "error=" + fail.reason());
                case RoomEffect.Quarantine quarantine -> timeline.record(TimelineEvent.QUARANTINED, "pages=" + quarantine.pages().length);
                case RoomEffect.ReleaseQuarantined released ->
                        timeline.record(TimelineEvent.QUARANTINE_RELEASED, "pages=" + released.pages().length + " proof=" + released.proof());
                default -> { }
            }
        }
        return effects;
    }

    private String plan(TransferPlan plan)
    {
        return "chunk=" + plan.chunk() + " pages=" + plan.pages() + " runs=" + plan.runs() + " bytes=" + plan.pages() * bytesPerPage;
    }

    private static boolean ignored(List<? extends RoomEffect> effects)
    {
        return effects.size() == 1 && effects.getFirst() instanceof RoomEffect.Ignored;
    }
}
