package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.Heartbeat;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.control.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.disagg.room.AuxLogprobs;
import io.handoff.core.scheduler.GenerateRequest;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.RequestRejectedException;
import io.handoff.core.scheduler.RoomTicket;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.trace.FailureCause;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ControlCodecTest
{
    /** {@code inputs} prompt entries from {@code inputFrom} and one output entry, each with {@code topN} alternatives. */
    static Logprobs logprobs(int inputFrom, int inputs, int topN)
    {
        List<TokenLogprob> input = new ArrayList<>();
        for (int i = 0; i < inputs; i++) {
            input.add(entry(inputFrom + i, topN));
        }
        return new Logprobs(inputFrom, input, List.of(entry(7, topN)));
    }

    private static TokenLogprob entry(int tokenId, int topN)
    {
        int[] ids = new int[topN];
        float[] values = new float[topN];
        for (int i = 0; i < topN; i++) {
            ids[i] = tokenId + i;
            values[i] = -0.5f * (i + 1) - tokenId;
        }
        return new TokenLogprob(tokenId, -0.25f - tokenId, ids, values);
    }

    static final RoomKey ROOM = new RoomKey(-3_000_000_000L, 7);
    static final Compatibility COMPATIBILITY = new Compatibility("tiny-mla", "seed:42", "MLA 2 layers, key row 12, value row 8 (in key row)",
            "BF16", 16, ControlMessage.PROTOCOL_VERSION);

    /** One of every message, with edge values: negative ids, empty and non-ASCII strings, empty and long arrays. */
    static List<ControlMessage> samples()
    {
        int[] manyPages = new int[5000];
        Arrays.setAll(manyPages, i -> i * 3);
        return List.of(
                new Hello(ControlMessage.PROTOCOL_VERSION, "decode-1:7001", Role.DECODE, COMPATIBILITY),
                new Hello(99, "", Role.PREFILL, COMPATIBILITY),
                HelloResult.ACCEPTED,
                HelloResult.refused("model is 'a' here but 'b' on the peer — naïve ✓"),
                new RegisterRegions("mooncake", new byte[] {0, 1, 2, -1, 127}),
                new RegisterRegions("nixl", new byte[0]),
                new RegionsRegistered(true, "tcp", EnumSet.of(TransferCapability.RECEIVER_VALIDATED_WRITES, TransferCapability.DRAIN_ACK), ""),
                new RegionsRegistered(false, "", Set.of(), "cannot map /dev/shm/x"),
                new RoomRequest(ROOM, "req-1", 4097, manyPages),
                new RoomRequest(new RoomKey(Long.MAX_VALUE, Integer.MAX_VALUE), "", 1, new int[] {0}),
                new ChunkDone(ROOM, 3, 12, 4),
                new AuxRecord(ROOM, 128_000, 4097, new int[] {0xdeadbeef, 0, -1, 42}),
                new AuxRecord(ROOM, -1, 1, new int[0]),
                new AuxRecord(ROOM, 7, 5, new int[] {1, 2}, Optional.of(logprobs(2, 3, 2))),
                new AuxRecord(ROOM, 7, 1, new int[0], Optional.of(new Logprobs(1, List.of(),
                        List.of(new TokenLogprob(7, Float.NEGATIVE_INFINITY, new int[0], new float[0]))))),
                new RoomFailed(ROOM, FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page 2"),
                new DrainRequest(ROOM),
                new DrainAck(new RoomKey(0, 0)),
                new DrainAck(ROOM, ControlMessage.MAX_SENDER_RANK),
                new RoomFailed(ROOM, FailureCause.DRAIN_DEADLINE, ""),
                new Heartbeat(Long.MIN_VALUE),
                new Heartbeat(12),
                new RoomClaim(ROOM, "req-1"),
                new RoomClaim(new RoomKey(-1, 0), ""),
                HelloResult.ACCEPTED.from(new PeerProcess("prefill-host/0b1c2d3e", 4242, 1_764_620_000_123L, "9f2c4e1a6b7d8e90")),
                new ControlMessage.ProcessQuery(Long.MAX_VALUE, 0),
                new ControlMessage.ProcessAttestation(4242, 1_764_620_000_123L, true),
                new ControlMessage.ProcessAttestation(-1, -1, false));
    }

    @Test
    void everyMessageSurvivesARoundTrip()
            throws MalformedFrameException
    {
        for (ControlMessage message : samples()) {
            assertThat(ControlCodec.decode(ControlCodec.encode(message))).as(message.toString()).isEqualTo(message);
        }
    }

    @Test
    void everyTruncationOfEveryMessageIsRejectedAsMalformed()
    {
        for (ControlMessage message : samples()) {
            byte[] frame = ControlCodec.encode(message);
            // long arrays: every prefix near the start and the end, and a stride through the middle
            for (int length = 0; length < frame.length; length += length < 64 || length > frame.length - 64 ? 1 : 97) {
                byte[] truncated = Arrays.copyOf(frame, length);
                assertThatThrownBy(() -> ControlCodec.decode(truncated))
                        .as("%s cut to %d of %d bytes", message, length, frame.length)
                        .isInstanceOf(MalformedFrameException.class);
            }
        }
    }

    @Test
    void trailingBytesAreRejected()
    {
        byte[] frame = ControlCodec.encode(new DrainAck(ROOM));
        byte[] longer = Arrays.copyOf(frame, frame.length + 2);
        assertThatThrownBy(() -> ControlCodec.decode(longer))
                .isInstanceOf(MalformedFrameException.class)
                .hasMessageStartingWith("2 unexpected bytes after DrainAck");
    }

    @Test
    void unknownTypeIsRejectedNamingIt()
    {
        assertThatThrownBy(() -> ControlCodec.decode(new byte[] {99, 0, 0}))
                .isInstanceOf(MalformedFrameException.class)
                .hasMessage("unknown message type 99 in a frame of 3 bytes");
        assertThatThrownBy(() -> ControlCodec.decode(new byte[0])).isInstanceOf(MalformedFrameException.class).hasMessage("empty frame");
    }

    @Test
    void countLargerThanTheFrameIsRejectedBeforeAllocating()
            throws IOException
    {
        for (int count : new int[] {Integer.MAX_VALUE, -1, 3}) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeByte(5);
            out.writeLong(1);
            out.writeInt(0);
            out.writeUTF("rid");
            out.writeInt(16);
            out.writeInt(0);
            out.writeInt(count);
            // room for two ints only
            out.writeInt(1);
            out.writeInt(2);
            assertThatThrownBy(() -> ControlCodec.decode(bytes.toByteArray()))
                    .isInstanceOf(MalformedFrameException.class)
                    .hasMessage("count " + count + " does not fit in the 8 bytes left in the frame");
        }
    }

    @Test
    void fieldsThatBreakAMessagesOwnRulesAreRejected()
            throws IOException
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(9);
        out.writeLong(1);
        // a negative generation
        out.writeInt(-4);
        assertThatThrownBy(() -> ControlCodec.decode(bytes.toByteArray()))
                .isInstanceOf(MalformedFrameException.class)
                .hasMessageContaining("generation must be >= 0, was -4");

        byte[] hello = ControlCodec.encode(new Hello(1, "h", Role.DECODE, COMPATIBILITY));
        // the role byte follows the type, the version and the 1-character host id
        hello[1 + 4 + 2 + 1] = 7;
        assertThatThrownBy(() -> ControlCodec.decode(hello)).isInstanceOf(MalformedFrameException.class).hasMessageContaining("unknown role 7");
    }

    @Test
    void randomBytesNeverDecodeToAnythingButAMessageOrAMalformedFrame()
    {
        Random random = new Random(20250601);
        int rejected = 0;
        for (int i = 0; i < 5000; i++) {
            byte[] frame = new byte[random.nextInt(64)];
            random.nextBytes(frame);
            if (i % 2 == 0 && frame.length > 0) {
                // a known type keeps the decoder past the first byte
                frame[0] = (byte) (1 + random.nextInt(12));
            }
            try {
                ControlMessage message = ControlCodec.decode(frame);
                assertThat(ControlCodec.decode(ControlCodec.encode(message))).as("whatever decodes is a valid message").isEqualTo(message);
            }
            catch (MalformedFrameException e) {
                assertThat(e.getMessage()).isNotBlank();
                rejected++;
            }
        }
        assertThat(rejected).isGreaterThan(4000);
    }

    @Test
    void mutatedValidFramesAreRejectedOrDecodeToAValidMessage()
    {
        Random random = new Random(7);
        for (ControlMessage message : samples()) {
            byte[] frame = ControlCodec.encode(message);
            for (int i = 0; i < 200; i++) {
                byte[] mutated = frame.clone();
                mutated[random.nextInt(Math.min(mutated.length, 48))] = (byte) random.nextInt();
                try {
                    assertThat(ControlCodec.decode(mutated)).isNotNull();
                }
                catch (MalformedFrameException e) {
                    assertThat(e.getMessage()).isNotBlank();
                }
            }
        }
    }

    @Test
    void capabilityUnknownToThisVersionIsLeftOut()
            throws IOException
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(4);
        out.writeBoolean(true);
        out.writeUTF("rdma");
        out.writeInt(2);
        out.writeUTF("TELEPORT");
        out.writeUTF("DRAIN_ACK");
        out.writeUTF("");
        assertThat(ControlCodec.decode(bytes.toByteArray()))
                .isEqualTo(new RegionsRegistered(true, "rdma", Set.of(TransferCapability.DRAIN_ACK), ""));
    }

    @Test
    void aRoomFailureWithACauseThisBuildDoesNotKnowIsAMalformedFrame()
    {
        byte[] frame = ControlCodec.encode(new RoomFailed(ROOM, FailureCause.PEER_LOST, "gone"));
        // "peer_lost" -> "peer_lozt": same length, unknown label
        String text = new String(frame, java.nio.charset.StandardCharsets.ISO_8859_1).replace("peer_lost", "peer_lozt");
        byte[] forged = text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ControlCodec.decode(forged))
                .isInstanceOf(MalformedFrameException.class)
                .hasMessageContaining("unknown failure cause 'peer_lozt'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new DrainAck(ROOM, -1)).hasMessageContaining("sender rank");
    }

    @Test
    void overlongReasonsAreClippedSoEveryMessageFitsItsFrame()
            throws MalformedFrameException
    {
        String reason = "x".repeat(100_000);
        RoomFailed failed = new RoomFailed(ROOM, FailureCause.TRANSPORT_FAILURE, reason);
        assertThat(failed.reason()).hasSize(ControlMessage.MAX_REASON_CHARS).endsWith("...");
        assertThat(ControlCodec.decode(ControlCodec.encode(failed))).isEqualTo(failed);
    }

    @Test
    void aClaimIsCappedAtItsLongestEncodingAndARequestIdBeyondTheFieldLimitIsRefused()
            throws MalformedFrameException
    {
        RoomClaim longest = new RoomClaim(new RoomKey(Long.MAX_VALUE, Integer.MAX_VALUE), "✓".repeat(Compatibility.MAX_FIELD_CHARS));
        byte[] frame = ControlCodec.encode(longest);
        assertThat(frame.length).isEqualTo(ControlCodec.maxFrameBytes(frame[0]));
        assertThat(ControlCodec.decode(frame)).isEqualTo(longest);
        assertThatThrownBy(() -> new RoomClaim(ROOM, "r".repeat(Compatibility.MAX_FIELD_CHARS + 1)))
                .hasMessage("request id is longer than " + Compatibility.MAX_FIELD_CHARS + " characters");
    }

    @Test
    void anAuxRecordsLogprobEntryWithMoreAlternativesThanAnyRequestMayAskForIsMalformed()
    {
        byte[] frame = ControlCodec.encode(new AuxRecord(ROOM, 7, 2, new int[0], Optional.of(logprobs(1, 1, 1))));
        // type, room, first token, prompt length, checksum count, presence, inputFrom, input count, token id, value: the count of alternatives
        int at = 1 + 12 + 4 + 4 + 4 + 1 + 4 + 4 + 4 + 4;
        assertThat(frame[at]).isEqualTo((byte) 1);
        frame[at] = (byte) (LogprobRequest.MAX_TOP_N + 1);
        assertThatThrownBy(() -> ControlCodec.decode(frame))
                .isInstanceOf(MalformedFrameException.class)
                .hasMessage("a log probability entry with 21 alternatives; at most 20");
        assertThatThrownBy(() -> new AuxRecord(ROOM, 7, 2, new int[0], Optional.of(logprobs(1, 1, LogprobRequest.MAX_TOP_N + 1))))
                .hasMessageContaining("at most 20 travel in an aux record");
    }

    @Test
    void anAuxRecordsBoundIsTheSizeOfTheLargestRecordOfItsRequest()
    {
        int prompt = 300;
        int pageSize = 16;
        for (int topN : new int[] {0, 3, LogprobRequest.MAX_TOP_N}) {
            int[] checksums = new int[Math.ceilDiv(prompt, pageSize)];
            AuxRecord largest = new AuxRecord(ROOM, 7, prompt, checksums, Optional.of(logprobs(1, prompt - 1, topN)));
            assertThat((long) ControlCodec.encode(largest).length)
                    .isEqualTo(ControlCodec.auxRecordBytes(prompt, pageSize, Optional.of(new LogprobRequest(topN, 0))));
        }
        assertThat((long) ControlCodec.encode(new AuxRecord(ROOM, 7, prompt, new int[19])).length)
                .isEqualTo(ControlCodec.auxRecordBytes(prompt, pageSize, Optional.empty()));
        // the default context fits with every alternative; a prompt of about 100k tokens with all of them does not
        assertThat(ControlCodec.auxRecordBytes(4096, 1, Optional.of(new LogprobRequest(LogprobRequest.MAX_TOP_N, 0)))).isLessThan(ControlCodec.MAX_FRAME_BYTES);
        assertThat(ControlCodec.auxRecordBytes(100_000, 1, Optional.of(new LogprobRequest(LogprobRequest.MAX_TOP_N, 0)))).isGreaterThan(ControlCodec.MAX_FRAME_BYTES);
    }

    @Test
    void aDisaggregatedRequestWhosePromptLogprobsCannotFitOneFrameIsRefusedBeforeItRuns()
    {
        RoomTicket ticket = new RoomTicket(ROOM, "");
        GenerateRequest huge = GenerateRequest.greedy("r", new int[100_000], 2).withTicket(ticket);
        AuxLogprobs.checkFits(huge);
        AuxLogprobs.checkFits(huge.withLogprobs(new LogprobRequest(LogprobRequest.MAX_TOP_N, -1)));
        AuxLogprobs.checkFits(huge.withLogprobs(new LogprobRequest(0, 0)));
        GenerateRequest colocated = GenerateRequest.greedy("r", new int[100_000], 2).withLogprobs(new LogprobRequest(LogprobRequest.MAX_TOP_N, 0));
        AuxLogprobs.checkFits(colocated);
        assertThatThrownBy(() -> AuxLogprobs.checkFits(huge.withLogprobs(new LogprobRequest(LogprobRequest.MAX_TOP_N, 0))))
                .isInstanceOf(RequestRejectedException.class)
                .hasMessageContaining("more than one control frame holds")
                .hasMessageContaining("ask for fewer alternatives or start the prompt's log probabilities later");
    }
}
