package io.handoff.core.security;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A frame's tag fed in parts (a backend's data frame, straight from its pool) is the tag of the whole frame, in sequence. */
class FrameMacTest
{
    private static final byte[] KEY = "a direction's key, 32 bytes long".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FRAME = "header and the page bytes after it".getBytes(StandardCharsets.UTF_8);

    @Test
    void aTagFedInPartsEqualsTheWholeFramesTagAndLeavesTheBuffersWhereTheyWere()
    {
        FrameMac whole = new FrameMac(KEY);
        FrameMac parts = new FrameMac(KEY);
        ByteBuffer head = ByteBuffer.wrap(FRAME, 0, 6).slice();
        ByteBuffer rest = ByteBuffer.allocateDirect(FRAME.length - 6).put(FRAME, 6, FRAME.length - 6).flip();

        for (int frame = 0; frame < 3; frame++) {
            byte[] expected = whole.tag(FRAME, FRAME.length);
            assertThat(parts.next(FRAME.length).update(head).update(rest).value()).isEqualTo(expected);
        }
        assertThat(head.position()).isZero();
        assertThat(rest.position()).isZero();
    }

    @Test
    void theSameBytesInAnotherPlaceOfTheSequenceOrUnderAnotherKeyDoNotMatch()
    {
        FrameMac sender = new FrameMac(KEY);
        byte[] first = sender.tag(FRAME, FRAME.length);
        FrameMac receiver = new FrameMac(KEY);
        assertThat(receiver.next(FRAME.length).update(ByteBuffer.wrap(FRAME)).matches(first)).isTrue();
        // a replay of the first frame, checked as the second
        assertThat(receiver.next(FRAME.length).update(ByteBuffer.wrap(FRAME)).matches(first)).isFalse();
        byte[] otherKey = KEY.clone();
        otherKey[0] ^= 1;
        assertThat(new FrameMac(otherKey).next(FRAME.length).update(ByteBuffer.wrap(FRAME)).matches(first)).isFalse();
    }

    @Test
    void aTagFedOtherThanItsAnnouncedLengthIsAnError()
    {
        FrameMac mac = new FrameMac(KEY);
        assertThatThrownBy(() -> mac.next(FRAME.length + 1).update(ByteBuffer.wrap(FRAME)).value())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("tagged over " + FRAME.length + " bytes");
        assertThatThrownBy(() -> mac.next(-1)).isInstanceOf(IllegalArgumentException.class);
    }
}
