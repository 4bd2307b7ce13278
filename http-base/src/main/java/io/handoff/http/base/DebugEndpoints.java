package io.handoff.http.base;

import com.typesafe.config.Config;

import java.net.InetAddress;
import java.util.Locale;

/**
 * {@code handoff.server.debug-endpoints}: whether the {@code /debug/...} routes exist. {@code auto} turns them on
 * only while the server listens on a loopback address, where nobody but this machine's users reaches them; API keys
 * apply to them either way.
 */
public enum DebugEndpoints
{
    AUTO,
    ON,
    OFF;

    public static DebugEndpoints parse(String value)
    {
        return switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "on" -> ON;
            case "off" -> OFF;
            default -> throw new IllegalArgumentException("handoff.server.debug-endpoints must be auto, on or off, not '" + value
                    + "'; auto turns them on only on a loopback address (handoff.server.host)");
        };
    }

    /** Whether the debug routes exist, as {@code handoff.server.debug-endpoints} and {@code handoff.server.host} say. */
    public static boolean enabled(Config config)
    {
        return parse(config.getString("handoff.server.debug-endpoints")).enabledOn(config.getString("handoff.server.host"));
    }

    /** Whether the debug routes exist on a server listening on {@code host}. */
    public boolean enabledOn(String host)
    {
        return switch (this) {
            case ON -> true;
            case OFF -> false;
            case AUTO -> loopback(host);
        };
    }

    /** A loopback literal or {@code localhost}; a name is not looked up (and not taken for loopback). */
    static boolean loopback(String host)
    {
        if (host.equalsIgnoreCase("localhost")) {
            return true;
        }
        try {
            return InetAddress.ofLiteral(host).isLoopbackAddress();
        }
        catch (IllegalArgumentException e) {
            return false;
        }
    }
}
