package io.handoff.cli;

import io.handoff.http.base.ServerConfig;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.UncheckedIOException;
import java.net.BindException;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/** What the commands that serve HTTP share: {@code --host} and {@code --port}, a failed bind in words, and the stop on SIGTERM. */
final class ListenOptions
{
    private static final Logger log = LogManager.getLogger(ListenOptions.class);

    /** Stops what serves, within the grace period. */
    @FunctionalInterface
    interface Stop
    {
        void stop()
                throws InterruptedException;
    }

    @Option(names = "--host", paramLabel = "HOST", description = "Address to listen on; sets handoff.server.host (default 127.0.0.1).")
    String host;

    @Option(names = "--port", paramLabel = "PORT", description = "Port to listen on, 0 for any free one; sets handoff.server.port (default 30000).")
    Integer port;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Adds the options given to {@code overrides} as {@code handoff.server.*} keys. */
    void applyTo(Map<String, String> overrides)
    {
        if (port != null && (port < 0 || port > 65535)) {
            throw new ParameterException(command.commandLine(), "--port must be in 0..65535, got " + port);
        }
        if (host != null) {
            overrides.put("handoff.server.host", host);
        }
        if (port != null) {
            overrides.put("handoff.server.port", Integer.toString(port));
        }
    }

    static UncheckedIOException cannotListen(ServerConfig config, BindException e)
    {
        return new UncheckedIOException("cannot listen on " + config.host() + ":" + config.port() + " (" + e.getMessage()
                + "); choose another address with --host/--port or handoff.server.*", e);
    }

    /**
     * Says {@code ready} once SIGTERM and Ctrl-C would run {@code stop}, then blocks until they have. Both run
     * shutdown hooks, and the launcher execs the JVM, so the signal reaches it. Whoever waits for the ready line
     * (a supervisor, a test) may signal at once and still get the graceful stop.
     */
    static void serveUntilSignalled(ServerConfig config, String ready, Stop stop)
            throws InterruptedException
    {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("handoff-shutdown").unstarted(() -> {
            log.info("shutting down: no new requests; in-flight ones have {} ms to finish", config.gracePeriod().toMillis());
            try {
                stop.stop();
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            finally {
                stopped.countDown();
            }
        }));
        log.info(ready);
        stopped.await();
    }
}
