package io.handoff.bench.transfer;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The sender's side of the receiver process, against small shell scripts that speak (or fail to speak) its lines. */
class ReceiverProcessTest
{
    private static final Duration WAIT = Duration.ofMinutes(1);

    @Test
    void readsTheDescriptorAmongOtherLinesAndAsksForChecksums()
            throws Exception
    {
        String script = "echo starting; echo '" + ReceiverProtocol.DESCRIPTOR + "AQID'; read line; [ \"$line\" = checksums ] "
                + "&& echo '" + ReceiverProtocol.CHECKSUMS + "0a0b,0c0d'; read line";
        try (ReceiverProcess receiver = ReceiverProcess.start(List.of("sh", "-c", script))) {
            assertThat(receiver.descriptor(WAIT)).containsExactly(1, 2, 3);
            assertThat(receiver.checksums(WAIT)).isEqualTo("0a0b,0c0d");
        }
    }

    @Test
    void aReceiverThatExitsBeforeItsDescriptorFailsWithTheEndOfItsLog()
            throws Exception
    {
        try (ReceiverProcess receiver = ReceiverProcess.start(List.of("sh", "-c", "echo 'transfer backend failed to open: no shm' >&2; exit 3"))) {
            assertThatThrownBy(() -> receiver.descriptor(WAIT))
                    .hasMessageContaining("the receiver process exited with code 3")
                    .hasMessageContaining("transfer backend failed to open: no shm");
        }
    }

    @Test
    void closingEndsAReceiverThatWaitsOnItsInput()
            throws Exception
    {
        ReceiverProcess receiver = ReceiverProcess.start(List.of("sh", "-c", "echo '" + ReceiverProtocol.DESCRIPTOR + "AA=='; cat >/dev/null"));
        receiver.descriptor(WAIT);

        receiver.close();

        assertThat(receiver.isAlive()).isFalse();
    }
}
