package io.handoff.core.disagg.control;

import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.trace.FailureCause;
import io.handoff.trace.PeerText;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * What a prefill and a decode say to each other on their control channel (see {@link ControlCodec} for
 * the bytes). Per connection: both send {@link Hello} and answer the other's with {@link HelloResult};
 * the decode then sends {@link RegisterRegions} once and the prefill answers {@link RegionsRegistered}.
 * Per room: {@link RoomClaim} (decode, when it receives the request), {@link RoomRequest} (decode, once it admitted
 * the request), {@link ChunkDone}s and one {@link AuxRecord} (prefill),
 * {@link RoomFailed} from either side, {@link DrainRequest} / {@link DrainAck} after a failure. After a restart: a decode asks
 * a prefill {@link ProcessQuery} about a lost prefill process on its host, answered by {@link ProcessAttestation}.
 * {@link Heartbeat}s keep an idle connection provably alive.
 *
 * <p>Records holding arrays compare them by content; callers must not mutate an array they passed in. Free-text
 * fields (host and request ids, reasons, transport names) keep no character that could break a log line
 * ({@link PeerText#printable}), whoever built the message.
 */
public sealed interface ControlMessage
{
    /** Bumped on any change to the messages or their encoding; peers must match exactly. */
    int PROTOCOL_VERSION = 7;
    /** The highest sender rank a drain ack may name (a room has at most this many + 1 senders). */
    int MAX_SENDER_RANK = 255;
    /** Longest reason text kept; a longer one is clipped, so a message always fits its frame. */
    int MAX_REASON_CHARS = 1000;

    enum Role
    {
        PREFILL,
        DECODE
    }

    /** A message about one room; every one carries the room's generation, so a retired generation's messages are recognisable. */
    sealed interface RoomMessage
            extends ControlMessage
    {
        RoomKey room();
    }

    record Hello(int protocolVersion, String hostId, Role role, Compatibility compatibility)
            implements ControlMessage
    {
        public Hello
        {
            hostId = PeerText.printable(requireNonNull(hostId, "hostId is null"));
            requireNonNull(role, "role is null");
            requireNonNull(compatibility, "compatibility is null");
            if (hostId.length() > Compatibility.MAX_FIELD_CHARS) {
                throw new IllegalArgumentException("host id is longer than " + Compatibility.MAX_FIELD_CHARS + " characters");
            }
        }
    }

    /**
     * The answer to a hello. {@code hostId}, {@code pid}, {@code startMillis} (the process's start, epoch milliseconds, or
     * {@link #UNKNOWN_START}) and {@code incarnation} identify the answering process, so that a peer on the same host can
     * tell, after the connection is gone, whether that process is gone too (a fenced peer: proof that its one-sided writes
     * have stopped), and so that a later process at the same place is recognised as another incarnation.
     */
    record HelloResult(boolean accepted, String reason, String hostId, long pid, long startMillis, String incarnation)
            implements ControlMessage
    {
        /** A start time the answering process could not read. */
        public static final long UNKNOWN_START = -1;
        public static final HelloResult ACCEPTED = new HelloResult(true, "", "", -1, UNKNOWN_START, "");

        public HelloResult
        {
            reason = clip(reason);
            hostId = clip(hostId);
            incarnation = clip(incarnation);
        }

        public static HelloResult refused(String reason)
        {
            return new HelloResult(false, reason, "", -1, UNKNOWN_START, "");
        }

        /** This answer, as given by {@code process}. */
        public HelloResult from(PeerProcess process)
        {
            return new HelloResult(accepted, reason, process.hostId(), process.pid(), process.startMillis(), process.incarnation());
        }

        /** The answering process, as this answer names it. */
        public PeerProcess process()
        {
            return new PeerProcess(hostId, pid, startMillis, incarnation);
        }
    }

    /**
     * The decode asks a prefill it reached: is process {@code pid}, started at {@code startMillis}, still alive on your
     * host? Asked only about a lost prefill process of the same host id (host name and boot) as the one asked, so that its
     * answer can prove the lost process's writes stopped (invariant I2).
     */
    record ProcessQuery(long pid, long startMillis)
            implements ControlMessage
    {
        public ProcessQuery
        {
            if (pid < 1 || startMillis < 0) {
                throw new IllegalArgumentException("a process query needs a pid >= 1 and a known start time, was pid " + pid + " started "
                        + startMillis);
            }
        }
    }

    /**
     * A prefill's answer to {@link ProcessQuery}: {@code gone} when no process {@code pid} that started at {@code startMillis}
     * runs on its host (none with that pid, or one that started at another time: the pid was reused). False when it is
     * alive or the prefill cannot tell.
     */
    record ProcessAttestation(long pid, long startMillis, boolean gone)
            implements ControlMessage {}

    /** The decode's KV regions, as its transfer backend's {@code expose} described them; sent once per prefill. */
    record RegisterRegions(String backendId, byte[] descriptor)
            implements ControlMessage
    {
        public RegisterRegions
        {
            requireNonNull(backendId, "backendId is null");
            requireNonNull(descriptor, "descriptor is null");
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof RegisterRegions other && backendId.equals(other.backendId) && Arrays.equals(descriptor, other.descriptor);
        }

        @Override
        public int hashCode()
        {
            return 31 * backendId.hashCode() + Arrays.hashCode(descriptor);
        }

        @Override
        public String toString()
        {
            return "RegisterRegions[backendId=" + backendId + ", descriptor=" + descriptor.length + " bytes]";
        }
    }

    /**
     * The prefill's answer to {@link RegisterRegions}: whether it connected to those regions, over which
     * transport, and what that connection guarantees (the decode's {@link ReleasePolicy} comes from it).
     */
    record RegionsRegistered(boolean accepted, String transport, Set<TransferCapability> capabilities, String reason)
            implements ControlMessage
    {
        public RegionsRegistered
        {
            transport = PeerText.printable(requireNonNull(transport, "transport is null"));
            capabilities = Set.copyOf(requireNonNull(capabilities, "capabilities is null"));
            reason = clip(reason);
        }

        public static RegionsRegistered refused(String reason)
        {
            return new RegionsRegistered(false, "", Set.of(), reason);
        }
    }

    /**
     * The decode received request {@code requestId} for this room and will send its page list once it admitted it: the
     * prefill's room stops waiting under the claim allowance and waits under the bootstrapping one, counted from the claim.
     * Sent before admission, so a decode that queues the request does not make the prefill fail it as unclaimed.
     */
    record RoomClaim(RoomKey room, String requestId)
            implements RoomMessage
    {
        public RoomClaim
        {
            requireNonNull(room, "room is null");
            requestId = PeerText.printable(requireNonNull(requestId, "requestId is null"));
            if (requestId.length() > Compatibility.MAX_FIELD_CHARS) {
                throw new IllegalArgumentException("request id is longer than " + Compatibility.MAX_FIELD_CHARS + " characters");
            }
        }
    }

    /**
     * The decode's destination pages for a room. The decode already holds the KV of the prompt's first {@code heldPages}
     * pages (its own prefix cache matched them): those are never written, and room-relative page {@code heldPages + i} goes to
     * pool page {@code destinationPages[i]}. At least the prompt's last page always moves.
     */
    record RoomRequest(RoomKey room, String requestId, int promptLength, int heldPages, int[] destinationPages)
            implements RoomMessage
    {
        public RoomRequest
        {
            requireNonNull(room, "room is null");
            requireNonNull(destinationPages, "destinationPages is null");
            requestId = PeerText.printable(requireNonNull(requestId, "requestId is null"));
            if (requestId.length() > Compatibility.MAX_FIELD_CHARS) {
                throw new IllegalArgumentException("request id is longer than " + Compatibility.MAX_FIELD_CHARS + " characters");
            }
            if (promptLength < 1) {
                throw new IllegalArgumentException("prompt length must be >= 1, was " + promptLength);
            }
            if (heldPages < 0) {
                throw new IllegalArgumentException("held pages must be >= 0, was " + heldPages);
            }
        }

        /** A page list for the whole prompt: the decode holds none of it. */
        public RoomRequest(RoomKey room, String requestId, int promptLength, int[] destinationPages)
        {
            this(room, requestId, promptLength, 0, destinationPages);
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof RoomRequest other && room.equals(other.room) && requestId.equals(other.requestId)
                    && promptLength == other.promptLength && heldPages == other.heldPages && Arrays.equals(destinationPages, other.destinationPages);
        }

        @Override
        public int hashCode()
        {
            return 31 * (31 * (31 * room.hashCode() + requestId.hashCode()) + heldPages) + Arrays.hashCode(destinationPages);
        }

        @Override
        public String toString()
        {
            return "RoomRequest[room=" + room + ", requestId=" + requestId + ", promptLength=" + promptLength + ", held=" + heldPages + ", pages="
                    + destinationPages.length + "]";
        }
    }

    /** Room-relative pages {@code firstPageIndex .. +pageCount-1} of chunk {@code chunk} are in the decode's memory. */
    record ChunkDone(RoomKey room, int chunk, int firstPageIndex, int pageCount)
            implements RoomMessage
    {
        public ChunkDone
        {
            requireNonNull(room, "room is null");
            if (chunk < 0 || firstPageIndex < 0 || pageCount < 1) {
                throw new IllegalArgumentException("bad chunk: chunk=" + chunk + " firstPageIndex=" + firstPageIndex + " pageCount=" + pageCount);
            }
        }
    }

    /**
     * The room's commit record, sent after its last data: the first output token (sampled on prefill),
     * one CRC32C per room page taken on prefill after the fence, or none when checksums are off, and, when the request
     * asked for log probabilities, the prefill's: the first token's as the only output entry, and the prompt's
     * ({@link Logprobs#input} from {@link Logprobs#inputFrom}), so that the decode reports what a colocated engine would.
     * Each entry has at most {@link LogprobRequest#MAX_TOP_N} alternatives; the decode checks the rest of the shape against
     * its own copy of the request ({@link AuxLogprobs}), and a request whose record could not fit one frame is refused
     * before it runs ({@link AuxLogprobs#checkFits}).
     */
    record AuxRecord(RoomKey room, int firstToken, int promptLength, int[] pageChecksums, Optional<Logprobs> logprobs)
            implements RoomMessage
    {
        public AuxRecord
        {
            requireNonNull(room, "room is null");
            requireNonNull(pageChecksums, "pageChecksums is null");
            requireNonNull(logprobs, "logprobs is null");
            logprobs.ifPresent(AuxRecord::checkTopBound);
        }

        /** A record without log probabilities. */
        public AuxRecord(RoomKey room, int firstToken, int promptLength, int[] pageChecksums)
        {
            this(room, firstToken, promptLength, pageChecksums, Optional.empty());
        }

        private static void checkTopBound(Logprobs logprobs)
        {
            for (List<TokenLogprob> entries : List.of(logprobs.input(), logprobs.output())) {
                for (TokenLogprob entry : entries) {
                    if (entry.topIds().length > LogprobRequest.MAX_TOP_N) {
                        throw new IllegalArgumentException("a log probability entry has " + entry.topIds().length + " alternatives; at most "
                                + LogprobRequest.MAX_TOP_N + " travel in an aux record");
                    }
                }
            }
        }

        @Override
        public boolean equals(Object o)
        {
            return o instanceof AuxRecord other && room.equals(other.room) && firstToken == other.firstToken
                    && promptLength == other.promptLength && Arrays.equals(pageChecksums, other.pageChecksums)
                    && logprobs.equals(other.logprobs);
        }

        @Override
        public int hashCode()
        {
            return 31 * (31 * room.hashCode() + firstToken) + Arrays.hashCode(pageChecksums);
        }

        @Override
        public String toString()
        {
            return "AuxRecord[room=" + room + ", firstToken=" + firstToken + ", promptLength=" + promptLength + ", checksums="
                    + pageChecksums.length + logprobs.map(l -> ", logprobs from " + l.inputFrom() + ": " + l.input().size() + " input, "
                    + l.output().size() + " output").orElse("") + "]";
        }
    }

    /** The sender gave up on the room, for {@code cause}: the peer fails its request with the same cause. */
    record RoomFailed(RoomKey room, FailureCause cause, String reason)
            implements RoomMessage
    {
        public RoomFailed
        {
            requireNonNull(room, "room is null");
            requireNonNull(cause, "cause is null");
            reason = clip(reason);
        }
    }

    /** The decode asks: tell me when no write for this room can land any more. */
    record DrainRequest(RoomKey room)
            implements RoomMessage
    {
        public DrainRequest
        {
            requireNonNull(room, "room is null");
        }
    }

    /**
     * No write of sender rank {@code senderRank} for this room can land any more: once every rank of the room acked,
     * the decode may release its quarantined pages.
     */
    record DrainAck(RoomKey room, int senderRank)
            implements RoomMessage
    {
        public DrainAck
        {
            requireNonNull(room, "room is null");
            if (senderRank < 0 || senderRank > MAX_SENDER_RANK) {
                throw new IllegalArgumentException("sender rank must be in [0, " + MAX_SENDER_RANK + "], was " + senderRank);
            }
        }

        /** The ack of a room's only sender (rank 0). */
        public DrainAck(RoomKey room)
        {
            this(room, 0);
        }
    }

    record Heartbeat(long sequence)
            implements ControlMessage {}

    private static String clip(String reason)
    {
        requireNonNull(reason, "reason is null");
        return PeerText.printable(reason.length() <= MAX_REASON_CHARS ? reason : reason.substring(0, MAX_REASON_CHARS - 3) + "...");
    }
}
