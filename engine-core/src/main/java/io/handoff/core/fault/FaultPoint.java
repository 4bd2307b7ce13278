package io.handoff.core.fault;

/**
 * The named places where a test-installed {@link FaultPlan} can park, delay, fail or corrupt the engine. Each
 * point passes two coordinates, documented per point; a plan matches on them.
 */
public enum FaultPoint
{
    /** The scheduler is about to run step {@code a}; {@code b} is unused. */
    SCHEDULER_BEFORE_STEP("scheduler: before step"),
    /** The forward of step {@code a} finished layer {@code b} (its KV rows for that layer are written). */
    FORWARD_AFTER_LAYER("forward: after layer"),
    /**
     * A tensor-parallel rank other than 0 finished layer {@code b} of the {@code a}-th step it ran (from 1): where a test
     * makes a rank die mid-step ({@code fail} ends its process).
     */
    RANK_AFTER_LAYER("rank: after layer"),
    /** A transfer is about to read the pages of chunk {@code b} of room {@code a}. */
    TRANSFER_BEFORE_CHUNK("transfer: before reading chunk"),
    /** A transfer has read (or written) page index {@code b} of room {@code a}. */
    TRANSFER_AFTER_PAGE("transfer: after page"),
    /** The prefill is about to post chunk {@code b} of room {@code a}. */
    PREFILL_BEFORE_POST("prefill: before posting chunk"),
    /**
     * The decode is about to verify the checksum of decode page {@code b}, which landed for room {@code a}; the page's
     * bytes come with the hit, so a {@code corrupt} rule can alter them as a bit flipped in flight would have.
     */
    DECODE_BEFORE_VERIFY("decode: before verifying page", true);

    private final String description;
    private final boolean carriesBytes;

    FaultPoint(String description)
    {
        this(description, false);
    }

    FaultPoint(String description, boolean carriesBytes)
    {
        this.description = description;
        this.carriesBytes = carriesBytes;
    }

    /** Whether hits at this point come with the bytes they guard, so a rule may corrupt them. */
    public boolean carriesBytes()
    {
        return carriesBytes;
    }

    public String description()
    {
        return description;
    }
}
