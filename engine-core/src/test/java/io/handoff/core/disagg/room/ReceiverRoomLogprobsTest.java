package io.handoff.core.disagg.room;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.DeadlineClock;
import io.handoff.core.disagg.room.RoomEffect.Commit;
import io.handoff.core.disagg.room.RoomEffect.Complete;
import io.handoff.core.disagg.room.RoomEffect.Fail;
import io.handoff.core.disagg.room.RoomEffect.Send;
import io.handoff.core.disagg.room.RoomEvent.PeerReady;
import io.handoff.core.disagg.room.RoomEvent.Received;
import io.handoff.core.scheduler.HandoffRequest;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;

import static io.handoff.core.disagg.room.ReceiverRoomTest.CHECKSUM;
import static io.handoff.core.disagg.room.ReceiverRoomTest.DEADLINES;
import static io.handoff.core.disagg.room.ReceiverRoomTest.PAGES;
import static io.handoff.core.disagg.room.ReceiverRoomTest.PROMPT;
import static io.handoff.core.disagg.room.ReceiverRoomTest.ROOM;
import static org.assertj.core.api.Assertions.assertThat;

/** The prefill's log probabilities are a peer's bytes: the decode commits only exactly the shape its own request implies. */
class ReceiverRoomLogprobsTest
{
    private static final int VOCAB = 259;
    private static final int[] PROMPT_IDS = IntStream.range(100, 100 + PROMPT).toArray();
    private static final LogprobRequest ASKED = new LogprobRequest(2, 3);
    private static final int FIRST_TOKEN = 99;

    private final DeadlineClock.Manual clock = new DeadlineClock.Manual();

    private ReceiverRoom room(Optional<LogprobRequest> logprobs)
    {
        HandoffRequest request = new HandoffRequest("rid-9", Optional.of(new RoomTicket(ROOM, "p")), PROMPT_IDS, PAGES, 4, logprobs, VOCAB);
        ReceiverRoom room = new ReceiverRoom(ROOM, "rid-9", PROMPT, PAGES, "prefill-a:7000", DEADLINES, Optional.of(CHECKSUM),
                AuxLogprobs.expected(request), clock.nanos());
        room.on(new PeerReady(ReleasePolicy.RELEASE_NOW), clock.nanos());
        room.on(new Received(new ChunkDone(ROOM, 0, 0, PAGES.length)), clock.nanos());
        return room;
    }

    private List<RoomEffect.ReceiverEffect> aux(ReceiverRoom room, Optional<Logprobs> logprobs)
    {
        int[] checksums = new int[PAGES.length];
        for (int i = 0; i < PAGES.length; i++) {
            checksums[i] = CHECKSUM.applyAsInt(PAGES[i]);
        }
        return room.on(new Received(new AuxRecord(ROOM, FIRST_TOKEN, PROMPT, checksums, logprobs)), clock.nanos());
    }

    private static TokenLogprob entry(int tokenId)
    {
        return new TokenLogprob(tokenId, -1.5f, new int[] {tokenId, 3}, new float[] {-1.5f, -2f});
    }

    /** What a prefill computes for {@link #ASKED}: prompt entries from position 3, the first token's as the only output. */
    private static Logprobs valid()
    {
        List<TokenLogprob> input = new ArrayList<>();
        for (int position = 3; position < PROMPT; position++) {
            input.add(entry(PROMPT_IDS[position]));
        }
        return new Logprobs(3, input, List.of(entry(FIRST_TOKEN)));
    }

    private static Logprobs withInput(int index, TokenLogprob replacement)
    {
        List<TokenLogprob> input = new ArrayList<>(valid().input());
        input.set(index, replacement);
        return new Logprobs(3, input, valid().output());
    }

    @Test
    void theRequestedShapeCommitsAndReachesTheSchedulerAsSent()
    {
        ReceiverRoom room = room(Optional.of(ASKED));
        assertThat(aux(room, Optional.of(valid()))).containsExactly(new Commit(PAGES), new Complete(FIRST_TOKEN, Optional.of(valid())));
        assertThat(room.phase()).isEqualTo(RoomPhase.SUCCESS);
        assertThat(aux(room(Optional.empty()), Optional.empty())).contains(new Complete(FIRST_TOKEN, Optional.empty()));
    }

    @Test
    void everyOtherShapeFailsTheRoomAsAProtocolViolation()
    {
        record Case(Optional<LogprobRequest> asked, Optional<Logprobs> sent, String reason) {}
        List<Case> cases = List.of(
                new Case(Optional.of(ASKED), Optional.empty(), "carries no log probabilities, but the request asked for them"),
                new Case(Optional.empty(), Optional.of(valid()), "carries log probabilities the request did not ask for"),
                new Case(Optional.of(new LogprobRequest(2, 0)), Optional.of(valid()), "11 prompt log probabilities from position 3; the request's are 13 from position 1"),
                new Case(Optional.of(ASKED), Optional.of(new Logprobs(3, valid().input().subList(1, 11), valid().output())), "10 prompt log probabilities"),
                new Case(Optional.of(ASKED), Optional.of(new Logprobs(3, valid().input(), List.of(entry(FIRST_TOKEN), entry(5)))), "2 output log probabilities"),
                new Case(Optional.of(ASKED), Optional.of(new Logprobs(3, valid().input(), List.of(entry(5)))), "the first token's log probability for token 5; the token there is 99"),
                new Case(Optional.of(ASKED), Optional.of(withInput(2, entry(7))), "prompt position 5's log probability for token 7; the token there is 105"),
                new Case(Optional.of(new LogprobRequest(3, 3)), Optional.of(valid()), "2 alternatives; the request asked for 3"),
                new Case(Optional.of(ASKED), Optional.of(withInput(0, new TokenLogprob(103, -1f, new int[] {103, VOCAB}, new float[] {-1f, -2f}))),
                        "names token 259 among prompt position 3's alternatives, outside the vocabulary"),
                new Case(Optional.of(ASKED), Optional.of(withInput(0, new TokenLogprob(103, 0.5f, new int[] {103, 3}, new float[] {-1f, -2f}))),
                        "log probability as 0.5, which is no log probability"),
                new Case(Optional.of(ASKED), Optional.of(withInput(0, new TokenLogprob(103, Float.NaN, new int[] {103, 3}, new float[] {-1f, -2f}))),
                        "log probability as NaN"),
                new Case(Optional.of(ASKED), Optional.of(withInput(0, new TokenLogprob(103, -1f, new int[] {103, 3}, new float[] {-2f, -1f}))),
                        "alternative 1 the log probability -1.0, which is none or out of order"),
                new Case(Optional.of(ASKED), Optional.of(withInput(0, new TokenLogprob(103, -1f, new int[] {103, 3}, new float[] {-1f, Float.NEGATIVE_INFINITY}))),
                        "alternative 1 the log probability -Infinity"));
        for (Case c : cases) {
            ReceiverRoom room = room(c.asked());
            List<RoomEffect.ReceiverEffect> effects = aux(room, c.sent());
            assertThat(room.phase()).as(c.reason()).isEqualTo(RoomPhase.FAILED);
            assertThat(room.failure()).as(c.reason()).hasValueSatisfying(reason -> assertThat(reason).startsWith("protocol violation: aux record").contains(c.reason()));
            assertThat(effects).as(c.reason()).noneMatch(effect -> effect instanceof Complete || effect instanceof Commit);
            assertThat(effects).as(c.reason()).contains(new Send(new RoomFailed(ROOM, FailureCause.TRANSPORT_FAILURE, room.failure().orElseThrow())),
                    new Fail(room.failure().orElseThrow(), FailureCause.TRANSPORT_FAILURE));
        }
    }
}
