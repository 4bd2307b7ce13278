/**
 * Arithmetic the kernels share: {@link io.handoff.math.ExactExp}, {@code exp} over vector lanes with exactly
 * {@link StrictMath#exp}'s bits, so that the engine's model and the attention plugins compute the same exponentials, and
 * {@link io.handoff.math.HalfLanes}, F16 widened in vector lanes.
 * Apart from the SPI so that the SPI stays free of incubator modules; kernels (the core and the attention plugins)
 * require it, the transfer backends and third-party plugins need not.
 */
module handoff.math {
    requires jdk.incubator.vector;

    exports io.handoff.math;
}
