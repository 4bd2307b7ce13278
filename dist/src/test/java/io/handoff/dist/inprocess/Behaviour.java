package io.handoff.dist.inprocess;

/** How the in-process backend's sender treats the transfer protocol. */
public enum Behaviour
{
    /** Waits on the fence through the core (FORWARD_SYNC), copies, reports once. */
    HONEST,
    /** Copies first, then waits on the fence and reports: a torn read the core cannot see, only the page checksums can (I3). */
    COPIES_BEFORE_FENCE,
    /** Copies without ever waiting on the fence or saying it reads, and reports completion. */
    SKIPS_FENCE,
    /** Says it reads before the fence is done. */
    READS_BEFORE_FENCE,
    /** Keeps the protocol, then reports the plan a second time. */
    REPORTS_TWICE,
    /** Copies and never reports. */
    NEVER_REPORTS
}
