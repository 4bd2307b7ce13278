package io.handoff.spi;

/**
 * The version of this service-provider interface. A provider built against a newer SPI than the
 * engine offers is reported unavailable rather than called into with methods it expects but the
 * engine lacks.
 */
public final class Spi
{
    /** Bumped on every incompatible change to the packages {@code io.handoff.spi.*}. */
    public static final int VERSION = 2;

    private Spi() {}
}
