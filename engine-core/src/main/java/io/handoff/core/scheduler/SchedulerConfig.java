package io.handoff.core.scheduler;

/**
 * How the scheduler batches.
 *
 * @param maxRunningRequests requests admitted at once (each holds a req_to_token row and its pages)
 * @param chunkedPrefillSize prompt tokens per step across all requests; non-last chunks are page-aligned
 * @param maxQueuedRequests requests waiting for admission beyond which new ones are refused
 * @param overlap schedule step k+1 on the CPU while step k runs on the compute stream
 * @param threads compute threads of the model's kernels
 * @param decodeMetadataProbe whether each decode step's metadata is checked (and dumped) before it runs (I3)
 * @param shutdownWait how long {@link Scheduler#close} waits for pages held for proof (I2) to come back
 */
public record SchedulerConfig(int maxRunningRequests, int chunkedPrefillSize, int maxQueuedRequests, boolean overlap, int threads,
        DecodeMetadataProbe.Mode decodeMetadataProbe, java.time.Duration shutdownWait)
{
    public static final java.time.Duration DEFAULT_SHUTDOWN_WAIT = java.time.Duration.ofMinutes(1);

    public SchedulerConfig(int maxRunningRequests, int chunkedPrefillSize, int maxQueuedRequests, boolean overlap, int threads,
            DecodeMetadataProbe.Mode decodeMetadataProbe)
    {
        this(maxRunningRequests, chunkedPrefillSize, maxQueuedRequests, overlap, threads, decodeMetadataProbe, DEFAULT_SHUTDOWN_WAIT);
    }

    /** Without the decode-metadata probe. */
    public SchedulerConfig(int maxRunningRequests, int chunkedPrefillSize, int maxQueuedRequests, boolean overlap, int threads)
    {
        this(maxRunningRequests, chunkedPrefillSize, maxQueuedRequests, overlap, threads, DecodeMetadataProbe.Mode.OFF);
    }

    public SchedulerConfig
    {
        java.util.Objects.requireNonNull(decodeMetadataProbe, "decodeMetadataProbe is null");
        java.util.Objects.requireNonNull(shutdownWait, "shutdownWait is null");
        if (maxRunningRequests < 1 || chunkedPrefillSize < 1 || maxQueuedRequests < 0 || threads < 1) {
            throw new IllegalArgumentException("bad scheduler config: running=" + maxRunningRequests + " chunk=" + chunkedPrefillSize
                    + " queued=" + maxQueuedRequests + " threads=" + threads);
        }
    }
}
