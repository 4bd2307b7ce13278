package io.handoff.bench.transfer;

/**
 * The lines the bench's receiver process and its parent exchange: the receiver prints its descriptor on stdout once
 * its pool is exposed, answers each {@code checksums} line on stdin with the checksums of its pool, and exits when
 * its stdin closes (so it never outlives a parent that is gone). Logs go to stderr, never between these lines.
 */
final class ReceiverProtocol
{
    static final String PREFIX = "handoff-bench-receiver ";
    static final String DESCRIPTOR = PREFIX + "descriptor ";
    static final String CHECKSUMS = PREFIX + "checksums ";
    static final String ASK_CHECKSUMS = "checksums";

    private ReceiverProtocol() {}
}
