package io.handoff.http.base;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The connection limits the JDK's HTTP server enforces itself, set from {@link RequestLimits}: it closes a
 * connection beyond {@code jdk.httpserver.maxConnections} as it is accepted, one whose request has not fully
 * arrived after {@code sun.net.httpserver.maxReqTime} (a slow-loris client), and one left idle for
 * {@code sun.net.httpserver.idleInterval} (also a new connection that sends nothing). It also turns Nagle's
 * algorithm off on the connections it accepts ({@code sun.net.httpserver.nodelay}; the JDK leaves it on): a
 * response whose headers and first event are written one after the other (a router relaying a stream, a server's
 * first token) would otherwise hold the event until the client acknowledged the headers, which a client delays by
 * up to 40 ms.
 *
 * <p>The JDK reads these system properties once, when the first server of the process starts; later servers of
 * the same process (threads of {@code handoff demo --in-process}, tests) share the first one's values, and a
 * warning says so when theirs differ. A property given on the command line ({@code HANDOFF_JAVA_OPTS}) wins.
 */
public final class JdkHttpServerLimits
{
    private static final Logger log = LogManager.getLogger(JdkHttpServerLimits.class);
    // The idle timer's period; the JDK's default (10 s) would let an idle connection live up to 10 s past its limit.
    private static final long CLOCK_TICK_MILLIS = 1000;

    private static Map<String, String> applied;

    private JdkHttpServerLimits() {}

    /** Sets the properties before the first server starts; call before every {@code HttpServer.create}. */
    public static synchronized void apply(RequestLimits limits)
    {
        Map<String, String> wanted = properties(limits);
        if (applied != null) {
            if (!applied.equals(wanted)) {
                log.warn("this process's HTTP connection limits were fixed by its first server ({}); this server's ({}) do not apply",
                        applied, wanted);
            }
            return;
        }
        for (Map.Entry<String, String> property : wanted.entrySet()) {
            String given = System.getProperty(property.getKey());
            if (given != null && !given.equals(property.getValue())) {
                log.info("JVM option -D{}={} overrides the configured {}", property.getKey(), given, property.getValue());
            }
            else {
                System.setProperty(property.getKey(), property.getValue());
            }
        }
        applied = wanted;
        log.debug("HTTP connection limits: {}", applied);
    }

    static Map<String, String> properties(RequestLimits limits)
    {
        Map<String, String> properties = new LinkedHashMap<>();
        // 0 and below mean no limit to the JDK, as to us
        properties.put("jdk.httpserver.maxConnections", Integer.toString(limits.maxConnections() == 0 ? -1 : limits.maxConnections()));
        // the JDK takes whole seconds; round up so that a limit never becomes shorter than configured
        properties.put("sun.net.httpserver.maxReqTime", Long.toString(ceilSeconds(limits.requestReadTimeout().toMillis())));
        properties.put("sun.net.httpserver.idleInterval", Long.toString(ceilSeconds(limits.idleTimeout().toMillis())));
        properties.put("sun.net.httpserver.clockTick", Long.toString(CLOCK_TICK_MILLIS));
        // each write of a stream goes out at once: its events are small and a client waits for every one
        properties.put("sun.net.httpserver.nodelay", "true");
        return properties;
    }

    private static long ceilSeconds(long millis)
    {
        return millis == 0 ? -1 : Math.ceilDiv(millis, 1000);
    }
}
