package io.handoff.core.transfer;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.handoff.spi.transfer.PoolDescription;

import static org.assertj.core.api.Assertions.assertThat;

/** A pool description from a peer either reads or is an IllegalArgumentException that says what was wrong. */
class PoolDescriptionsFuzzTest
{
    @FuzzTest(maxExecutions = 20_000)
    void descriptionReadsOrIsRefused(byte[] description)
    {
        try {
            PoolDescription pool = PoolDescriptions.read(description);
            assertThat(pool.hostId()).isNotNull();
        }
        catch (IllegalArgumentException e) {
            assertThat(e.getMessage()).isNotBlank();
        }
    }
}
