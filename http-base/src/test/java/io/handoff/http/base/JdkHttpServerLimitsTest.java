package io.handoff.http.base;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** How the configured limits become the JDK HTTP server's properties (their effect is tested on a real process in dist's HardeningIT). */
class JdkHttpServerLimitsTest
{
    @Test
    void limitsBecomeTheJdksPropertiesInItsUnits()
    {
        Map<String, String> properties = JdkHttpServerLimits.properties(new RequestLimits(64, Duration.ofMillis(1500), Duration.ofSeconds(45), 0, 1, 0));

        assertThat(properties).containsExactly(
                Map.entry("jdk.httpserver.maxConnections", "64"),
                Map.entry("sun.net.httpserver.maxReqTime", "2"),
                Map.entry("sun.net.httpserver.idleInterval", "45"),
                Map.entry("sun.net.httpserver.clockTick", "1000"),
                Map.entry("sun.net.httpserver.nodelay", "true"));
    }

    @Test
    void zeroMeansNoLimitToTheJdkAsToTheConfiguration()
    {
        Map<String, String> properties = JdkHttpServerLimits.properties(new RequestLimits(0, Duration.ZERO, Duration.ofSeconds(30), 0, 1, 0));

        assertThat(properties).containsEntry("jdk.httpserver.maxConnections", "-1").containsEntry("sun.net.httpserver.maxReqTime", "-1");
    }
}
