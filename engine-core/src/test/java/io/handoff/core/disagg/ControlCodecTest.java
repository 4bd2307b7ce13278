package io.handoff.core.disagg;

import io.handoff.core.disagg.ControlCodec.MalformedFrameException;
import io.handoff.core.disagg.ControlMessage.AuxRecord;
import io.handoff.core.disagg.ControlMessage.ChunkDone;
import io.handoff.core.disagg.ControlMessage.DrainAck;
import io.handoff.core.disagg.ControlMessage.DrainRequest;
import io.handoff.core.disagg.ControlMessage.Heartbeat;
import io.handoff.core.disagg.ControlMessage.Hello;
import io.handoff.core.disagg.ControlMessage.HelloResult;
import io.handoff.core.disagg.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.ControlMessage.Role;
import io.handoff.core.disagg.ControlMessage.RoomFailed;
import io.handoff.core.disagg.ControlMessage.RoomRequest;
import io.handoff.core.scheduler.FailureCause;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ControlCodecTest
{
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
                new RoomFailed(ROOM, FailureCause.CHECKSUM_MISMATCH, "KV checksum mismatch on room page 2"),
                new DrainRequest(ROOM),
                new DrainAck(new RoomKey(0, 0)),
                new DrainAck(ROOM, ControlMessage.MAX_SENDER_RANK),
                new RoomFailed(ROOM, FailureCause.DRAIN_DEADLINE, ""),
                new Heartbeat(Long.MIN_VALUE),
                new Heartbeat(12));
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
                frame[0] = (byte) (1 + random.nextInt(11));
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
}
