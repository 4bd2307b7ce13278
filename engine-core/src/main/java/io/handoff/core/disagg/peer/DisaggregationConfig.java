package io.handoff.core.disagg.peer;

import com.typesafe.config.Config;
import io.handoff.core.disagg.control.ControlChannel;
import io.handoff.core.disagg.room.RoomDeadlines;
import io.handoff.core.transfer.TransferLink;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/**
 * The {@code handoff.disaggregation} and {@code handoff.debug.kv-fidelity} settings.
 *
 * @param drainDeadline how long a quarantine may wait for its proof before its peer is suspect (see {@link SuspectPeers})
 * @param transferWindow plans a prefill hands to a pipelined connection before their outcomes are reported (see {@link TransferLink})
 * @param decodePrefixCache decode: whether a routed request takes the prompt pages its prefix cache holds from there and
 *         receives only the rest
 */
public record DisaggregationConfig(
        String transferBackend,
        String earlySend,
        String controlHost,
        int controlPort,
        ControlChannel.Liveness liveness,
        Duration connectTimeout,
        RoomDeadlines deadlines,
        int maxPagesPerPlan,
        TransferLink.Timeouts linkTimeouts,
        boolean checksums,
        Duration drainDeadline,
        int transferWindow,
        boolean decodePrefixCache)
{
    public DisaggregationConfig
    {
        requireNonNull(transferBackend, "transferBackend is null");
        requireNonNull(earlySend, "earlySend is null");
        requireNonNull(controlHost, "controlHost is null");
        requireNonNull(liveness, "liveness is null");
        requireNonNull(connectTimeout, "connectTimeout is null");
        requireNonNull(deadlines, "deadlines is null");
        requireNonNull(linkTimeouts, "linkTimeouts is null");
        requireNonNull(drainDeadline, "drainDeadline is null");
        if (drainDeadline.isNegative() || drainDeadline.isZero()) {
            throw new IllegalArgumentException("handoff.disaggregation.drain-deadline must be positive, was " + drainDeadline);
        }
        if (transferWindow < 1) {
            throw new IllegalArgumentException("handoff.disaggregation.transfer-window must be at least 1 plan, was " + transferWindow);
        }
    }

    /** Settings with the decode's prefix cache on. */
    public DisaggregationConfig(String transferBackend, String earlySend, String controlHost, int controlPort, ControlChannel.Liveness liveness,
            Duration connectTimeout, RoomDeadlines deadlines, int maxPagesPerPlan, TransferLink.Timeouts linkTimeouts, boolean checksums,
            Duration drainDeadline, int transferWindow)
    {
        this(transferBackend, earlySend, controlHost, controlPort, liveness, connectTimeout, deadlines, maxPagesPerPlan, linkTimeouts, checksums,
                drainDeadline, transferWindow, true);
    }

    /** Settings with one plan at a time per connection. */
    public DisaggregationConfig(String transferBackend, String earlySend, String controlHost, int controlPort, ControlChannel.Liveness liveness,
            Duration connectTimeout, RoomDeadlines deadlines, int maxPagesPerPlan, TransferLink.Timeouts linkTimeouts, boolean checksums,
            Duration drainDeadline)
    {
        this(transferBackend, earlySend, controlHost, controlPort, liveness, connectTimeout, deadlines, maxPagesPerPlan, linkTimeouts, checksums,
                drainDeadline, 1);
    }

    /** Settings with the default drain deadline (60 s). */
    public DisaggregationConfig(String transferBackend, String earlySend, String controlHost, int controlPort, ControlChannel.Liveness liveness,
            Duration connectTimeout, RoomDeadlines deadlines, int maxPagesPerPlan, TransferLink.Timeouts linkTimeouts, boolean checksums)
    {
        this(transferBackend, earlySend, controlHost, controlPort, liveness, connectTimeout, deadlines, maxPagesPerPlan, linkTimeouts, checksums,
                Duration.ofSeconds(60));
    }

    public static DisaggregationConfig from(Config config)
    {
        Config d = config.getConfig("handoff.disaggregation");
        return new DisaggregationConfig(
                d.getString("transfer-backend"),
                d.getString("early-send-cached-prefix"),
                d.getString("control-host"),
                d.getInt("control-port"),
                new ControlChannel.Liveness(d.getDuration("heartbeat-interval"), d.getDuration("peer-timeout")),
                d.getDuration("connect-timeout"),
                new RoomDeadlines(d.getDuration("bootstrapping-timeout"), d.getDuration("waiting-for-input-timeout"),
                        d.getDuration("transferring-timeout"), d.getDuration("claim-timeout")),
                d.getInt("max-pages-per-plan"),
                new TransferLink.Timeouts(d.getDuration("fence-timeout"), d.getDuration("transfer-report-timeout"),
                        d.getDuration("transfer-close-wait")),
                config.getString("handoff.debug.kv-fidelity").equals("checksum"),
                d.getDuration("drain-deadline"),
                d.getInt("transfer-window"),
                d.getBoolean("decode-prefix-cache"));
    }
}
