package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.RoomKey;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The bytes of a mooncake tcp data connection (big-endian). The sender opens with a hello and the receiver
 * answers it; then the sender writes each plan as data frames followed by an end (or abort) frame, and the
 * receiver answers that with one reply. Plans on a connection never interleave.
 * <pre>
 *   hello  (8):  int magic "MKV1", byte version, 3 zero bytes          (both directions)
 *   header (40): byte kind, 3 zero bytes, long room id, int generation, int chunk,
 *                int region, int destination page, int page count, long byte length
 *                DATA:  byte length = page count x the region's page stride; that many bytes follow
 *                ROWS:  a head slice of every row (token slot) of the pages: the payload is long row offset (bytes into
 *                       each row), int rows per page, int row bytes, then for each row of the pages in order its
 *                       row bytes; byte length = 16 + page count x rows per page x row bytes
 *                END:   region, page and count are 0; byte length = the plan's total data bytes
 *                ABORT: the sender gave up on the plan; the receiver forgets it and replies NACK
 *   reply  (32): byte kind (ACK | NACK), 3 zero bytes, long room id, int generation, int chunk,
 *                long bytes written, int reason length; then the reason, UTF-8
 * </pre>
 * With a cluster secret ({@link io.handoff.spi.transfer.FrameTags}, keyed by the connection's handshake) a 32-byte tag
 * follows each header, each DATA payload and each reply (with its reason): HMAC-SHA256 over the part's place in its
 * direction's sequence, its length and its bytes. Without one nothing follows, and the bytes are as above.
 */
final class WireFormat
{
    static final int MAGIC = 0x4D4B5631;
    static final byte VERSION = 2;
    static final int HELLO_BYTES = 8;

    static final int HEADER_BYTES = 40;
    static final byte DATA = 1;
    static final byte END = 2;
    static final byte ABORT = 3;
    static final byte ROWS = 6;
    static final int ROWS_PREFIX_BYTES = 16;

    static final int REPLY_BYTES = 32;
    static final byte ACK = 4;
    static final byte NACK = 5;
    static final int MAX_REASON_BYTES = 4096;

    // Field offsets: the receiver reads them straight out of its header buffer, without a header object.
    static final int KIND = 0;
    static final int ROOM = 4;
    static final int GENERATION = 12;
    static final int CHUNK = 16;
    static final int REGION = 20;
    static final int PAGE = 24;
    static final int COUNT = 28;
    static final int LENGTH = 32;

    static final int REPLY_BYTES_WRITTEN = 20;
    static final int REPLY_REASON_LENGTH = 28;

    private WireFormat() {}

    static ByteBuffer hello()
    {
        return ByteBuffer.allocate(HELLO_BYTES).putInt(MAGIC).put(VERSION).put(new byte[3]).flip();
    }

    /** Whether {@code hello} (position 0, {@link #HELLO_BYTES} long) is a hello of this protocol version. */
    static boolean isHello(ByteBuffer hello)
    {
        return hello.getInt(0) == MAGIC && hello.get(4) == VERSION;
    }

    /** Fills {@code header} (cleared, then flipped for writing). */
    static void header(ByteBuffer header, byte kind, RoomKey room, int chunk, int region, int page, int count, long length)
    {
        header.clear()
                .put(kind).put((byte) 0).put((byte) 0).put((byte) 0)
                .putLong(room.roomId())
                .putInt(room.generation())
                .putInt(chunk)
                .putInt(region)
                .putInt(page)
                .putInt(count)
                .putLong(length)
                .flip();
    }

    /** A reply for the plan {@code (room, chunk)}, flipped for writing. */
    static ByteBuffer reply(ByteBuffer buffer, RoomKey room, int chunk, long bytes, String refusal)
    {
        byte[] reason = refusal == null ? new byte[0] : truncate(refusal.getBytes(StandardCharsets.UTF_8));
        buffer.clear()
                .put(refusal == null ? ACK : NACK).put((byte) 0).put((byte) 0).put((byte) 0)
                .putLong(room.roomId())
                .putInt(room.generation())
                .putInt(chunk)
                .putLong(bytes)
                .putInt(reason.length)
                .put(reason);
        return buffer.flip();
    }

    private static byte[] truncate(byte[] reason)
    {
        if (reason.length <= MAX_REASON_BYTES) {
            return reason;
        }
        byte[] shorter = new byte[MAX_REASON_BYTES];
        System.arraycopy(reason, 0, shorter, 0, MAX_REASON_BYTES);
        return shorter;
    }
}
