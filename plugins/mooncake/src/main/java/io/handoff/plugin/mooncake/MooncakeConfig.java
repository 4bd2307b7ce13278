package io.handoff.plugin.mooncake;

import io.handoff.spi.PluginSettings;

import java.time.Duration;
import java.util.function.Supplier;

import static java.util.Objects.requireNonNull;

/**
 * The settings under {@code handoff.plugins.mooncake}, read once and checked. Every key is declared, with
 * its default and its schema line, in this module's {@code reference.conf}.
 *
 * @param advertiseHost the address put in descriptors; empty means the listen host
 * @param maxFrameBytes the largest page batch in one frame (tcp) or one copy (shm); a page is never split
 * @param socketBufferBytes SO_SNDBUF / SO_RCVBUF of data connections; 0 leaves the system's default
 */
record MooncakeConfig(
        Transport transport,
        String listenHost,
        String advertiseHost,
        Duration connectTimeout,
        Duration ackTimeout,
        long maxFrameBytes,
        int socketBufferBytes)
{
    static final long MIN_FRAME_BYTES = 4096;
    static final long MAX_FRAME_BYTES = 1L << 30;

    MooncakeConfig
    {
        requireNonNull(transport, "transport is null");
        requireNonNull(listenHost, "listenHost is null");
        requireNonNull(advertiseHost, "advertiseHost is null");
        positive("connect-timeout", connectTimeout);
        positive("ack-timeout", ackTimeout);
        if (listenHost.isBlank()) {
            throw new IllegalArgumentException("handoff.plugins.mooncake.listen-host is empty: name an address of this machine, e.g. 127.0.0.1 or 0.0.0.0");
        }
        if (maxFrameBytes < MIN_FRAME_BYTES || maxFrameBytes > MAX_FRAME_BYTES) {
            throw new IllegalArgumentException("handoff.plugins.mooncake.max-frame-bytes = " + maxFrameBytes + ": allowed "
                    + MIN_FRAME_BYTES + " (4KiB) .. " + MAX_FRAME_BYTES + " (1GiB)");
        }
        if (socketBufferBytes < 0) {
            throw new IllegalArgumentException("handoff.plugins.mooncake.socket-buffer-bytes = " + socketBufferBytes + ": must be >= 0");
        }
    }

    static MooncakeConfig from(PluginSettings settings)
    {
        long socketBuffer = settings.getBytes("socket-buffer-bytes");
        if (socketBuffer > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("handoff.plugins.mooncake.socket-buffer-bytes = " + socketBuffer + ": at most 2GiB - 1");
        }
        return new MooncakeConfig(
                Transport.parse(settings.getString("transport")),
                settings.getString("listen-host"),
                settings.getString("advertise-host"),
                settings.getDuration("connect-timeout"),
                settings.getDuration("ack-timeout"),
                settings.getBytes("max-frame-bytes"),
                (int) socketBuffer);
    }

    /** The host senders should dial: the advertised one, or the listen host unless that is a wildcard. */
    String descriptorHost(Supplier<String> localHostName)
    {
        if (!advertiseHost.isBlank()) {
            return advertiseHost;
        }
        return listenHost.equals("0.0.0.0") || listenHost.equals("::") ? localHostName.get() : listenHost;
    }

    private static void positive(String key, Duration duration)
    {
        requireNonNull(duration, key + " is null");
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException("handoff.plugins.mooncake." + key + " = " + duration + ": must be positive");
        }
    }
}
