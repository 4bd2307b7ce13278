package io.handoff.plugin.nixl;

import io.handoff.spi.PluginSettings;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * The settings under {@code handoff.plugins.nixl}, read once and checked. Every key is declared, with its default
 * and its schema line, in this module's {@code reference.conf}.
 *
 * @param tls UCX_TLS for this backend's UCX context; empty keeps UCX's own choice
 * @param stagingBytes the registered buffer each sender peer gathers a plan's pages into; larger plans are sent in parts
 * @param flushTimeout how long a plan's puts may take to complete at the receiver, and an endpoint to close
 * @param unauthenticatedNetwork whether UCX may use network devices although its own connections authenticate nobody
 * @param staging true: puts read a copy gathered after the fence (STAGING); false: puts read the source pool after the
 *        sender waited on the fence itself (FORWARD_SYNC)
 */
record NixlConfig(String library, String tls, long stagingBytes, Duration flushTimeout, boolean unauthenticatedNetwork, boolean staging)
{
    static final long MIN_STAGING_BYTES = 4096;
    static final long MAX_STAGING_BYTES = 16L << 30;

    NixlConfig
    {
        requireNonNull(library, "library is null");
        requireNonNull(tls, "tls is null");
        requireNonNull(flushTimeout, "flushTimeout is null");
        if (library.isBlank()) {
            throw new IllegalArgumentException("handoff.plugins.nixl.library is empty: name the UCX ucp library, e.g. libucp.so.0");
        }
        if (!tls.matches("[A-Za-z0-9_,:^-]*")) {
            throw new IllegalArgumentException("handoff.plugins.nixl.tls = \"" + tls + "\": not a UCX transport list "
                    + "(comma-separated names such as posix,sysv,self,tcp, or empty for UCX's choice)");
        }
        if (stagingBytes < MIN_STAGING_BYTES || stagingBytes > MAX_STAGING_BYTES) {
            throw new IllegalArgumentException("handoff.plugins.nixl.staging-buffer = " + stagingBytes + ": allowed "
                    + MIN_STAGING_BYTES + " (4KiB) .. " + MAX_STAGING_BYTES + " (16GiB)");
        }
        positive("flush-timeout", flushTimeout);
    }

    static NixlConfig from(PluginSettings settings)
    {
        return new NixlConfig(
                settings.getString("library"),
                settings.getString("tls").strip(),
                settings.getBytes("staging-buffer"),
                settings.getDuration("flush-timeout"),
                settings.getBoolean("allow-unauthenticated-network"),
                settings.getBoolean("staging"));
    }

    /** The transport list as a person reads it. */
    String tlsName()
    {
        return tls.isEmpty() ? "UCX default" : tls;
    }

    private static void positive(String key, Duration duration)
    {
        if (duration.isZero() || duration.isNegative()) {
            throw new IllegalArgumentException("handoff.plugins.nixl." + key + " = " + duration + ": must be positive");
        }
    }
}
