/**
 * The Handoff SPI: what a plugin implements and what the engine hands it. Contracts and value types, and one piece of
 * shared arithmetic ({@code io.handoff.spi.math.ExactExp}, so that the engine's kernels and the attention plugins
 * compute the same exponentials); it requires nothing but the JDK ({@code java.base} and its vector module), so a
 * plugin compiled against it sees none of the engine.
 */
module handoff.spi {
    requires jdk.incubator.vector;

    exports io.handoff.spi;
    exports io.handoff.spi.math;
    exports io.handoff.spi.transfer;
    exports io.handoff.spi.attention;
}
