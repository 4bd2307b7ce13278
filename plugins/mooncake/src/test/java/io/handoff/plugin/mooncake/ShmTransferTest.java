package io.handoff.plugin.mooncake;

import io.handoff.spi.transfer.TransferBackendProvider;
import io.handoff.spi.transfer.TransferCapability;
import io.handoff.testkit.transfer.TransferBackendContract;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import static io.handoff.spi.transfer.TransferCapability.DRAIN_ACK;
import static io.handoff.spi.transfer.TransferCapability.FORWARD_SYNC;
import static io.handoff.spi.transfer.TransferCapability.ONE_SIDED;
import static io.handoff.spi.transfer.TransferCapability.SAME_HOST;

/**
 * The transfer contract over shm: one-sided writes straight into the receiver's mapped pages, in batches of up to
 * 4 KiB, so a page is in the receiver's pool when afterPage reports it and the receiver's guard is never asked.
 */
class ShmTransferTest
        extends TransferBackendContract
{
    @Override
    protected TransferBackendProvider provider()
    {
        return new MooncakeProvider();
    }

    @Override
    protected Map<String, String> settings()
    {
        return Map.of("transport", "shm", "max-frame-bytes", "4KiB");
    }

    @Override
    protected Set<TransferCapability> expectedCapabilities()
    {
        return EnumSet.of(ONE_SIDED, SAME_HOST, DRAIN_ACK, FORWARD_SYNC, TransferCapability.HEAD_SLICES);
    }

    @Override
    protected String expectedTransport()
    {
        return "shm";
    }
}
