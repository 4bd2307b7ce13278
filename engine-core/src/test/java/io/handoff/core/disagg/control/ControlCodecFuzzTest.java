package io.handoff.core.disagg.control;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.handoff.core.disagg.control.ControlCodec.MalformedFrameException;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Arbitrary bytes from a peer: a control frame either decodes to a message that encodes and decodes again, or is a
 * {@link MalformedFrameException}; a frame stream either yields frames or fails with an I/O error, and in every case the
 * reader gives back all of the {@link FrameBudget} it took. Seeds: {@code ControlCodecFuzzTestInputs/} in the test
 * resources; {@code make fuzz} explores from them.
 */
class ControlCodecFuzzTest
{
    private static final long BUDGET_BYTES = 64 << 10;

    @FuzzTest(maxExecutions = 20_000)
    void frameDecodesOrIsMalformed(byte[] frame)
    {
        ControlMessage message;
        try {
            message = ControlCodec.decode(frame);
        }
        catch (MalformedFrameException e) {
            // a record's own check is an IllegalArgumentException; anything else wrapped here is a decoder bug
            if (e.getCause() instanceof RuntimeException cause) {
                assertThat(cause).as("cause of: " + e.getMessage()).isInstanceOf(IllegalArgumentException.class);
            }
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        byte[] again = ControlCodec.encode(message);
        assertThat(again.length).isLessThanOrEqualTo(ControlCodec.maxFrameBytes(frame[0]));
        try {
            assertThat(ControlCodec.decode(again).getClass()).isEqualTo(message.getClass());
        }
        catch (MalformedFrameException e) {
            throw new AssertionError("a decoded " + message + " does not decode again after encoding: " + e.getMessage(), e);
        }
    }

    @FuzzTest(maxExecutions = 20_000)
    void frameReaderReturnsItsBudget(byte[] stream)
    {
        FrameBudget budget = new FrameBudget(BUDGET_BYTES);
        FrameReader reader = new FrameReader(new DataInputStream(new ByteArrayInputStream(stream)), budget, null);
        long consumed = 0;
        while (true) {
            byte[] frame;
            try {
                frame = reader.next();
            }
            catch (EOFException | MalformedFrameException | FrameReader.BudgetExhausted | FrameReader.PeerAuthenticates e) {
                break;
            }
            catch (IOException e) {
                throw new AssertionError("a byte array stream failed with an unexpected " + e, e);
            }
            assertThat(budget.held()).as("budget held between frames").isZero();
            consumed += 4 + frame.length;
            assertThat(frame.length).isLessThanOrEqualTo(ControlCodec.maxFrameBytes(frame[0]));
            assertThat(consumed).isLessThanOrEqualTo(stream.length);
        }
        assertThat(budget.held()).as("budget held after the stream ended").isZero();
    }
}
