package io.handoff.core.disagg;

import com.typesafe.config.Config;
import io.handoff.core.transfer.TransferLink;

import java.time.Duration;

import static java.util.Objects.requireNonNull;

/** The {@code handoff.disaggregation} and {@code handoff.debug.kv-fidelity} settings. */
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
        boolean checksums)
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
                config.getString("handoff.debug.kv-fidelity").equals("checksum"));
    }
}
