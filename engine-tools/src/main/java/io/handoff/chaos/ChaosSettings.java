package io.handoff.chaos;

import io.handoff.demo.DemoSettings;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What {@code handoff chaos} was asked to do.
 *
 * @param overrides the {@code -D} overrides, passed on to every server (and the colocated reference)
 * @param requestDeadline a request without a terminal outcome by then is hung
 * @param stall how long a stalled transfer waits before each chunk
 * @param settleTimeout how long the servers may take, after the last request, to become idle and give every page back
 * @param duration when present, requests are sent until this much time has passed ({@code requests} is then ignored)
 * @param killEvery when present, a server is killed (SIGKILL) and restarted this often during the traffic
 * @param killRouter whether {@code killEvery} may pick the router too
 * @param out when present, a folder for the report and the resource chart
 */
public record ChaosSettings(
        int requests,
        int concurrency,
        int maxNewTokens,
        long seed,
        double abortRate,
        double failRate,
        int prefills,
        String transferBackend,
        Optional<String> model,
        Optional<Path> configFile,
        Map<String, String> overrides,
        KillRestart killRestart,
        Duration requestDeadline,
        Duration stall,
        Duration startupTimeout,
        Duration settleTimeout,
        Duration stopGrace,
        Optional<Duration> duration,
        Optional<Duration> killEvery,
        boolean killRouter,
        Optional<Path> out)
{
    /** Which server, if any, is killed (SIGKILL) once and started again mid-run. */
    public enum KillRestart
    {
        NONE, PREFILL, DECODE;

        public String label()
        {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public ChaosSettings
    {
        atLeast("--requests", requests, 1);
        atLeast("--concurrency", concurrency, 1);
        atLeast("--max-new-tokens", maxNewTokens, 2);
        atLeast("--prefills", prefills, 1);
        fraction("--abort-rate", abortRate);
        fraction("--fail-rate", failRate);
        requireNonNull(transferBackend, "transferBackend is null");
        requireNonNull(model, "model is null");
        requireNonNull(configFile, "configFile is null");
        overrides = Map.copyOf(requireNonNull(overrides, "overrides is null"));
        requireNonNull(killRestart, "killRestart is null");
        requireNonNull(requestDeadline, "requestDeadline is null");
        requireNonNull(stall, "stall is null");
        requireNonNull(startupTimeout, "startupTimeout is null");
        requireNonNull(settleTimeout, "settleTimeout is null");
        requireNonNull(stopGrace, "stopGrace is null");
        requireNonNull(duration, "duration is null");
        requireNonNull(killEvery, "killEvery is null");
        requireNonNull(out, "out is null");
        if (duration.isPresent() && duration.get().compareTo(Duration.ofSeconds(10)) < 0) {
            throw new IllegalArgumentException("--duration must be at least 10s, got " + duration.get().toSeconds() + " s");
        }
        if (killEvery.isPresent() && killEvery.get().compareTo(Duration.ofSeconds(5)) < 0) {
            throw new IllegalArgumentException("--kill-every must be at least 5s (a server needs seconds to start again), got "
                    + killEvery.get().toMillis() + " ms");
        }
        if (killEvery.isPresent() && killRestart != KillRestart.NONE) {
            throw new IllegalArgumentException("--kill-every and --kill-restart exclude each other: --kill-every already kills and restarts");
        }
        if (killRouter && killEvery.isEmpty()) {
            throw new IllegalArgumentException("--kill-router needs --kill-every");
        }
        if (stall.compareTo(requestDeadline) >= 0) {
            throw new IllegalArgumentException("--stall " + stall.toMillis() + " ms must be shorter than --request-deadline "
                    + requestDeadline.toSeconds() + " s, or every stalled request would be reported hung");
        }
    }

    private static void atLeast(String option, int value, int least)
    {
        if (value < least) {
            throw new IllegalArgumentException(option + " must be at least " + least + ", got " + value);
        }
    }

    private static void fraction(String option, double value)
    {
        if (!(value >= 0 && value <= 1)) {
            throw new IllegalArgumentException(option + " must be a fraction in [0, 1], got " + value);
        }
    }

    /** The demo's view: the same servers on loopback, one decode, the router in front. */
    public DemoSettings demo()
    {
        return new DemoSettings(requests, seed, maxNewTokens, concurrency, prefills, 1, transferBackend, model, Optional.empty(),
                configFile, overrides, false, false, startupTimeout, requestDeadline, stopGrace);
    }

    /** Whether the traffic is bounded by {@link #duration} rather than by {@link #requests}. */
    boolean timed()
    {
        return duration.isPresent();
    }

    ChaosFaults faults()
    {
        return ChaosFaults.of(failRate, seed, stall);
    }
}
