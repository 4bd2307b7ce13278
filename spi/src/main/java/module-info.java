/**
 * The Handoff SPI: what a plugin implements and what the engine hands it. Contracts and value types only; it requires
 * nothing but {@code java.base}, so a plugin compiled against it sees none of the engine.
 */
module handoff.spi {
    exports io.handoff.spi;
    exports io.handoff.spi.transfer;
    exports io.handoff.spi.attention;
}
