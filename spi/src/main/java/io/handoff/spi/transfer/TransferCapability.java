package io.handoff.spi.transfer;

/**
 * What a transfer backend guarantees. The core reads these, never a backend's behaviour, when it
 * decides whether an optimisation is safe (early send of the cached prefix needs {@link #FORWARD_SYNC}
 * or {@link #STAGING}) and how a page may be released after an abort (I2).
 */
public enum TransferCapability
{
    /** Pages are copied to a staging buffer after the producing forward's fence, and sent from the copy. */
    STAGING,
    /** The transfer thread waits on the producing forward's fence before it reads a page. */
    FORWARD_SYNC,
    /** The sender acknowledges "no write in flight for this room" on request. */
    DRAIN_ACK,
    /** The receiver copies the data itself and drops writes for a retired room generation. */
    RECEIVER_VALIDATED_WRITES,
    /** The peer writes into our memory without our involvement. */
    ONE_SIDED,
    /** Works between hosts. */
    REMOTE,
    /** Works between processes on one host. */
    SAME_HOST,
    /**
     * The connection takes the next plan before the previous one's outcome is reported: {@link TransferPeer#send} may
     * return with the plan still in flight and report it later, from any thread, and the core then hands over up to
     * its window of plans ({@code handoff.disaggregation.transfer-window}) before the first of them is reported. Each
     * plan is still reported exactly once; plans still reach {@code send} in post order, on one thread.
     */
    PIPELINED,
    /**
     * Plans move through any {@link SliceMap} the core gives {@link TransferBackend#connect(String, byte[], SliceMap)}, not only the
     * identity: what pairs a prefill and a decode of different tensor-parallel layouts, each receiving rank getting its KV heads.
     */
    HEAD_SLICES
}
