package io.handoff.core.disagg.control;

import io.handoff.core.disagg.control.ControlMessage.AuxRecord;
import io.handoff.core.disagg.control.ControlMessage.ChunkDone;
import io.handoff.core.disagg.control.ControlMessage.DrainAck;
import io.handoff.core.disagg.control.ControlMessage.DrainRequest;
import io.handoff.core.disagg.control.ControlMessage.Heartbeat;
import io.handoff.core.disagg.control.ControlMessage.Hello;
import io.handoff.core.disagg.control.ControlMessage.HelloResult;
import io.handoff.core.disagg.control.ControlMessage.ProcessAttestation;
import io.handoff.core.disagg.control.ControlMessage.ProcessQuery;
import io.handoff.core.disagg.control.ControlMessage.RegionsRegistered;
import io.handoff.core.disagg.control.ControlMessage.RegisterRegions;
import io.handoff.core.disagg.control.ControlMessage.Role;
import io.handoff.core.disagg.control.ControlMessage.RoomClaim;
import io.handoff.core.disagg.control.ControlMessage.RoomFailed;
import io.handoff.core.disagg.control.ControlMessage.RoomRequest;
import io.handoff.core.scheduler.LogprobRequest;
import io.handoff.core.scheduler.Logprobs;
import io.handoff.core.scheduler.TokenLogprob;
import io.handoff.core.scheduler.TokenLogprobs;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.trace.FailureCause;
import io.handoff.trace.PeerText;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The bytes of a {@link ControlMessage}: one type byte, then the fields in declaration order, big-endian
 * ({@link DataOutputStream}); strings as modified UTF-8 with a 16-bit length, arrays as an int count then
 * the elements; an optional part as a boolean, then the part when present. An aux record's log probabilities are
 * {@code inputFrom}, then the input and the output entries (a count, then per entry its token id, its value as a float,
 * a byte counting its alternatives, and each alternative's id and value). A frame on the wire is an int length followed by
 * these bytes ({@link ControlChannel}).
 *
 * <p>Decoding trusts nothing: every count is checked against the bytes that remain before anything is
 * allocated, trailing bytes are an error, and every failure is a {@link MalformedFrameException} that says
 * what was wrong.
 */
public final class ControlCodec
{
    /** The largest frame either side sends or accepts (a 1M-page room request is 4 MiB). */
    public static final int MAX_FRAME_BYTES = 16 << 20;
    private static final int MAX_CAUSE_CHARS = 32;
    /** A log probability entry without alternatives: id, value, count of alternatives (each alternative adds 8). */
    private static final int LOGPROB_ENTRY_BYTES = 4 + 4 + 1;

    static final byte HELLO = 1;
    private static final byte HELLO_RESULT = 2;
    private static final byte REGISTER_REGIONS = 3;
    private static final byte REGIONS_REGISTERED = 4;
    private static final byte ROOM_REQUEST = 5;
    private static final byte CHUNK_DONE = 6;
    private static final byte AUX_RECORD = 7;
    private static final byte ROOM_FAILED = 8;
    private static final byte DRAIN_REQUEST = 9;
    private static final byte DRAIN_ACK = 10;
    private static final byte HEARTBEAT = 11;
    private static final byte ROOM_CLAIM = 12;
    private static final byte PROCESS_QUERY = 13;
    private static final byte PROCESS_ATTESTATION = 14;

    /** A frame that is not a valid message of this protocol version. */
    public static final class MalformedFrameException
            extends IOException
    {
        public MalformedFrameException(String message)
        {
            super(message);
        }

        public MalformedFrameException(String message, Throwable cause)
        {
            super(message, cause);
        }
    }

    private ControlCodec() {}

    /**
     * The largest frame of message type {@code type} (its first byte) either side accepts, or 0 for a type this
     * version does not know. Each bound is what the largest valid message of the type encodes to, so a reader can
     * refuse a length prefix before buffering a byte of it.
     */
    public static int maxFrameBytes(byte type)
    {
        // a string field is at most MAX_FIELD_CHARS (or MAX_REASON_CHARS) characters of up to 3 bytes, plus its 2-byte length
        int field = 2 + 3 * Compatibility.MAX_FIELD_CHARS;
        int reason = 2 + 3 * ControlMessage.MAX_REASON_CHARS;
        return switch (type) {
            case HELLO -> 1 + 4 + field + 1 + 4 * field + 4 + 4 + 4;
            case HELLO_RESULT -> 1 + 1 + reason + reason + 8 + 8 + reason;
            // a pool description of MAX_REGIONS regions is 1.5 MiB; backends add their own bytes (remote keys)
            case REGISTER_REGIONS -> 4 << 20;
            // a transport name (a 16-bit UTF string), capability names, a reason
            case REGIONS_REGISTERED -> 128 << 10;
            // page lists and checksum lists: 4 bytes per page of a room, up to the frame limit; an aux record's log
            // probabilities too (auxRecordBytes: a request whose record would not fit is refused before it runs)
            case ROOM_REQUEST, AUX_RECORD -> MAX_FRAME_BYTES;
            case CHUNK_DONE -> 1 + 12 + 12;
            // a cause label is a short ASCII word
            case ROOM_FAILED -> 1 + 12 + 2 + MAX_CAUSE_CHARS + reason;
            case DRAIN_REQUEST -> 1 + 12;
            case DRAIN_ACK -> 1 + 12 + 1;
            case HEARTBEAT -> 1 + 8;
            case ROOM_CLAIM -> 1 + 12 + field;
            case PROCESS_QUERY -> 1 + 8 + 8;
            case PROCESS_ATTESTATION -> 1 + 8 + 8 + 1;
            default -> 0;
        };
    }

    public static byte[] encode(ControlMessage message)
    {
        requireNonNull(message, "message is null");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            switch (message) {
                case Hello m -> {
                    out.writeByte(HELLO);
                    out.writeInt(m.protocolVersion());
                    out.writeUTF(m.hostId());
                    out.writeByte(m.role().ordinal());
                    Compatibility c = m.compatibility();
                    out.writeUTF(c.modelName());
                    out.writeUTF(c.weightsHash());
                    out.writeUTF(c.kvLayout());
                    out.writeUTF(c.kvDtype());
                    out.writeInt(c.pageSize());
                    out.writeInt(c.protocolVersion());
                    out.writeInt(c.tensorRanks());
                }
                case HelloResult m -> {
                    out.writeByte(HELLO_RESULT);
                    out.writeBoolean(m.accepted());
                    out.writeUTF(m.reason());
                    out.writeUTF(m.hostId());
                    out.writeLong(m.pid());
                    out.writeLong(m.startMillis());
                    out.writeUTF(m.incarnation());
                }
                case RegisterRegions m -> {
                    out.writeByte(REGISTER_REGIONS);
                    out.writeUTF(m.backendId());
                    out.writeInt(m.descriptor().length);
                    out.write(m.descriptor());
                }
                case RegionsRegistered m -> {
                    out.writeByte(REGIONS_REGISTERED);
                    out.writeBoolean(m.accepted());
                    out.writeUTF(m.transport());
                    // by name, so a peer with more capabilities than this version knows stays decodable
                    out.writeInt(m.capabilities().size());
                    for (TransferCapability capability : m.capabilities()) {
                        out.writeUTF(capability.name());
                    }
                    out.writeUTF(m.reason());
                }
                case RoomRequest m -> {
                    out.writeByte(ROOM_REQUEST);
                    writeRoom(out, m.room());
                    out.writeUTF(m.requestId());
                    out.writeInt(m.promptLength());
                    out.writeInt(m.heldPages());
                    writeInts(out, m.destinationPages());
                }
                case ChunkDone m -> {
                    out.writeByte(CHUNK_DONE);
                    writeRoom(out, m.room());
                    out.writeInt(m.chunk());
                    out.writeInt(m.firstPageIndex());
                    out.writeInt(m.pageCount());
                }
                case AuxRecord m -> {
                    out.writeByte(AUX_RECORD);
                    writeRoom(out, m.room());
                    out.writeInt(m.firstToken());
                    out.writeInt(m.promptLength());
                    writeInts(out, m.pageChecksums());
                    out.writeBoolean(m.logprobs().isPresent());
                    if (m.logprobs().isPresent()) {
                        writeLogprobs(out, m.logprobs().get());
                    }
                }
                case RoomFailed m -> {
                    out.writeByte(ROOM_FAILED);
                    writeRoom(out, m.room());
                    out.writeUTF(m.cause().label());
                    out.writeUTF(m.reason());
                }
                case DrainRequest m -> {
                    out.writeByte(DRAIN_REQUEST);
                    writeRoom(out, m.room());
                }
                case DrainAck m -> {
                    out.writeByte(DRAIN_ACK);
                    writeRoom(out, m.room());
                    out.writeByte(m.senderRank());
                }
                case Heartbeat m -> {
                    out.writeByte(HEARTBEAT);
                    out.writeLong(m.sequence());
                }
                case RoomClaim m -> {
                    out.writeByte(ROOM_CLAIM);
                    writeRoom(out, m.room());
                    out.writeUTF(m.requestId());
                }
                case ProcessQuery m -> {
                    out.writeByte(PROCESS_QUERY);
                    out.writeLong(m.pid());
                    out.writeLong(m.startMillis());
                }
                case ProcessAttestation m -> {
                    out.writeByte(PROCESS_ATTESTATION);
                    out.writeLong(m.pid());
                    out.writeLong(m.startMillis());
                    out.writeBoolean(m.gone());
                }
            }
        }
        catch (IOException e) {
            // a ByteArrayOutputStream does not fail; writeUTF does for > 64 KiB, which the records' bounds rule out
            throw new UncheckedIOException("cannot encode " + message, e);
        }
        if (bytes.size() > MAX_FRAME_BYTES) {
            throw new IllegalArgumentException(message + " needs " + bytes.size() + " bytes, more than the frame limit " + MAX_FRAME_BYTES);
        }
        return bytes.toByteArray();
    }

    public static ControlMessage decode(byte[] frame)
            throws MalformedFrameException
    {
        requireNonNull(frame, "frame is null");
        if (frame.length == 0) {
            throw new MalformedFrameException("empty frame");
        }
        if (frame.length > MAX_FRAME_BYTES) {
            throw new MalformedFrameException("frame of " + frame.length + " bytes exceeds the limit " + MAX_FRAME_BYTES);
        }
        ByteArrayInputStream bytes = new ByteArrayInputStream(frame);
        DataInputStream in = new DataInputStream(bytes);
        int type = frame[0];
        try {
            in.readByte();
            ControlMessage message = switch (type) {
                case HELLO -> new Hello(in.readInt(), in.readUTF(), readRole(in),
                        new Compatibility(in.readUTF(), in.readUTF(), in.readUTF(), in.readUTF(), in.readInt(), in.readInt(), in.readInt()));
                case HELLO_RESULT -> new HelloResult(in.readBoolean(), in.readUTF(), in.readUTF(), in.readLong(), in.readLong(), in.readUTF());
                case REGISTER_REGIONS -> new RegisterRegions(in.readUTF(), readBytes(in, bytes));
                case REGIONS_REGISTERED -> new RegionsRegistered(in.readBoolean(), in.readUTF(), readCapabilities(in, bytes), in.readUTF());
                case ROOM_REQUEST -> new RoomRequest(readRoom(in), in.readUTF(), in.readInt(), in.readInt(), readInts(in, bytes));
                case CHUNK_DONE -> new ChunkDone(readRoom(in), in.readInt(), in.readInt(), in.readInt());
                case AUX_RECORD -> new AuxRecord(readRoom(in), in.readInt(), in.readInt(), readInts(in, bytes),
                        in.readBoolean() ? Optional.of(readLogprobs(in, bytes)) : Optional.empty());
                case ROOM_FAILED -> new RoomFailed(readRoom(in), readCause(in), in.readUTF());
                case DRAIN_REQUEST -> new DrainRequest(readRoom(in));
                case DRAIN_ACK -> new DrainAck(readRoom(in), in.readUnsignedByte());
                case HEARTBEAT -> new Heartbeat(in.readLong());
                case ROOM_CLAIM -> new RoomClaim(readRoom(in), in.readUTF());
                case PROCESS_QUERY -> new ProcessQuery(in.readLong(), in.readLong());
                case PROCESS_ATTESTATION -> new ProcessAttestation(in.readLong(), in.readLong(), in.readBoolean());
                default -> throw new MalformedFrameException("unknown message type " + type + " in a frame of " + frame.length + " bytes");
            };
            if (bytes.available() != 0) {
                throw new MalformedFrameException(bytes.available() + " unexpected bytes after " + message);
            }
            return message;
        }
        catch (MalformedFrameException e) {
            throw e;
        }
        catch (EOFException e) {
            throw new MalformedFrameException("truncated frame: " + frame.length + " bytes is too short for message type " + type, e);
        }
        catch (IOException | RuntimeException e) {
            // bad UTF-8, or a record's own checks (negative generation, empty run ...)
            throw new MalformedFrameException("invalid message of type " + type + ": " + e.getMessage(), e);
        }
    }

    private static void writeRoom(DataOutputStream out, RoomKey room)
            throws IOException
    {
        out.writeLong(room.roomId());
        out.writeInt(room.generation());
    }

    private static RoomKey readRoom(DataInputStream in)
            throws IOException
    {
        return new RoomKey(in.readLong(), in.readInt());
    }

    private static FailureCause readCause(DataInputStream in)
            throws IOException
    {
        String label = in.readUTF();
        return FailureCause.fromLabel(label)
                .orElseThrow(() -> new MalformedFrameException("unknown failure cause '" + PeerText.clean(label, 40) + "'"));
    }

    private static Role readRole(DataInputStream in)
            throws IOException
    {
        int ordinal = in.readUnsignedByte();
        Role[] roles = Role.values();
        if (ordinal >= roles.length) {
            throw new MalformedFrameException("unknown role " + ordinal);
        }
        return roles[ordinal];
    }

    private static void writeInts(DataOutputStream out, int[] values)
            throws IOException
    {
        out.writeInt(values.length);
        for (int value : values) {
            out.writeInt(value);
        }
    }

    private static int[] readInts(DataInputStream in, ByteArrayInputStream remaining)
            throws IOException
    {
        int count = readCount(in, remaining, Integer.BYTES);
        int[] values = new int[count];
        for (int i = 0; i < count; i++) {
            values[i] = in.readInt();
        }
        return values;
    }

    /** {@code inputFrom}, then the input entries and the output entries, each list as a count then its entries. */
    private static void writeLogprobs(DataOutputStream out, Logprobs logprobs)
            throws IOException
    {
        out.writeInt(logprobs.inputFrom());
        for (List<TokenLogprob> entries : List.of(logprobs.input(), logprobs.output())) {
            out.writeInt(entries.size());
            for (TokenLogprob entry : entries) {
                out.writeInt(entry.tokenId());
                out.writeFloat(entry.logprob());
                out.writeByte(entry.topIds().length);
                for (int i = 0; i < entry.topIds().length; i++) {
                    out.writeInt(entry.topIds()[i]);
                    out.writeFloat(entry.topLogprobs()[i]);
                }
            }
        }
    }

    private static Logprobs readLogprobs(DataInputStream in, ByteArrayInputStream remaining)
            throws IOException
    {
        int inputFrom = in.readInt();
        List<TokenLogprob> input = readLogprobEntries(in, remaining);
        return new Logprobs(inputFrom, input, readLogprobEntries(in, remaining));
    }

    private static List<TokenLogprob> readLogprobEntries(DataInputStream in, ByteArrayInputStream remaining)
            throws IOException
    {
        int count = readCount(in, remaining, LOGPROB_ENTRY_BYTES);
        List<TokenLogprob> entries = new ArrayList<>(count);
        for (int e = 0; e < count; e++) {
            int tokenId = in.readInt();
            float logprob = in.readFloat();
            int top = in.readUnsignedByte();
            if (top > LogprobRequest.MAX_TOP_N) {
                throw new MalformedFrameException("a log probability entry with " + top + " alternatives; at most " + LogprobRequest.MAX_TOP_N);
            }
            int[] topIds = new int[top];
            float[] topLogprobs = new float[top];
            for (int i = 0; i < top; i++) {
                topIds[i] = in.readInt();
                topLogprobs[i] = in.readFloat();
            }
            entries.add(new TokenLogprob(tokenId, logprob, topIds, topLogprobs));
        }
        return entries;
    }

    /**
     * The bytes of the largest aux record of a room whose prompt is {@code promptLength} tokens on pages of {@code pageSize}
     * tokens, for a request that asks {@code logprobs} of it: what one frame must hold, so a request it exceeds
     * {@link #MAX_FRAME_BYTES} for cannot run disaggregated ({@link AuxLogprobs#checkFits}).
     */
    public static long auxRecordBytes(int promptLength, int pageSize, Optional<LogprobRequest> logprobs)
    {
        long bytes = 1 + 12 + 4 + 4 + 4 + 4L * Math.ceilDiv(promptLength, pageSize) + 1;
        if (logprobs.isEmpty()) {
            return bytes;
        }
        long entries = 1 + promptLength - TokenLogprobs.inputFrom(logprobs.get(), promptLength);
        return bytes + 4 + 4 + 4 + entries * (LOGPROB_ENTRY_BYTES + 8L * logprobs.get().topN());
    }

    private static byte[] readBytes(DataInputStream in, ByteArrayInputStream remaining)
            throws IOException
    {
        byte[] values = new byte[readCount(in, remaining, 1)];
        in.readFully(values);
        return values;
    }

    private static Set<TransferCapability> readCapabilities(DataInputStream in, ByteArrayInputStream remaining)
            throws IOException
    {
        // each name takes at least its 2-byte length
        int count = readCount(in, remaining, 2);
        Set<TransferCapability> capabilities = EnumSet.noneOf(TransferCapability.class);
        for (int i = 0; i < count; i++) {
            String name = in.readUTF();
            for (TransferCapability capability : TransferCapability.values()) {
                if (capability.name().equals(name)) {
                    capabilities.add(capability);
                }
            }
            // an unknown name is a guarantee this version cannot use: leaving it out is the conservative reading
        }
        return capabilities;
    }

    // a count that the remaining bytes cannot hold is rejected before anything is allocated
    private static int readCount(DataInputStream in, ByteArrayInputStream remaining, int bytesPerElement)
            throws IOException
    {
        int count = in.readInt();
        if (count < 0 || (long) count * bytesPerElement > remaining.available()) {
            throw new MalformedFrameException("count " + count + " does not fit in the " + remaining.available() + " bytes left in the frame");
        }
        return count;
    }
}
