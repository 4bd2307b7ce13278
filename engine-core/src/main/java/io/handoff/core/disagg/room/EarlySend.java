package io.handoff.core.disagg.room;

import io.handoff.spi.transfer.TransferCapability;

import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * The gate for early send of the cached prefix (invariant I1), decided from what the transfer backend declares,
 * never from what it does: at startup from the provider's declaration (where {@code on} with an unsafe backend
 * refuses to start), then again for each connection from what that connection reports
 * ({@link #forConnection}), which may be narrower. Early send needs a backend that orders its reads after the
 * producing forward's fence ({@link TransferCapability#FORWARD_SYNC}) or snapshots after it
 * ({@link TransferCapability#STAGING}); the core enforces either promise on its transfer link, and waits on the
 * fence itself for a connection that makes neither, which is why such a connection gains nothing from early send.
 *
 * @param requested the setting: auto, on or off
 * @param forced set only by a test hook that bypasses the gate (see {@code Disaggregation.Options}); no connection narrows it
 */
public record EarlySend(String requested, boolean enabled, String reason, boolean forced)
{
    public EarlySend
    {
        requireNonNull(requested, "requested is null");
        requireNonNull(reason, "reason is null");
    }

    public EarlySend(String requested, boolean enabled, String reason)
    {
        this(requested, enabled, reason, false);
    }

    /** On whatever the backend and its connections declare: only for a test that shows what the gate prevents. */
    public static EarlySend forcedForTesting(String requested, String backendId, Set<TransferCapability> declared)
    {
        return new EarlySend(requested, true, "forced on by a test hook that bypasses the gate; transfer backend '" + backendId
                + "' declares " + declared, true);
    }

    /**
     * This decision narrowed to one connection that reports {@code reported}. Off stays off; on or auto become off
     * when the connection reports neither FORWARD_SYNC nor STAGING, with a reason naming what it lacks.
     */
    public EarlySend forConnection(String backendId, Set<TransferCapability> reported)
    {
        if (!enabled || forced) {
            return this;
        }
        if (reported.contains(TransferCapability.FORWARD_SYNC) || reported.contains(TransferCapability.STAGING)) {
            return this;
        }
        return new EarlySend(requested, false, requested + ": this connection of transfer backend '" + backendId + "' reports " + reported
                + ", neither FORWARD_SYNC nor STAGING (narrower than the backend's declaration), so it gets no early send");
    }

    /**
     * Throws {@link IllegalArgumentException} for {@code on} with a backend that declares neither
     * capability: the operator asked for something unsafe, and the engine refuses to start.
     */
    public static EarlySend decide(String setting, String backendId, Set<TransferCapability> capabilities)
    {
        boolean forwardSync = capabilities.contains(TransferCapability.FORWARD_SYNC);
        boolean staging = capabilities.contains(TransferCapability.STAGING);
        String guarantee = forwardSync && staging ? "FORWARD_SYNC and STAGING" : forwardSync ? "FORWARD_SYNC" : "STAGING";
        String safe = "transfer backend '" + backendId + "' declares " + guarantee
                + (forwardSync ? " (it reads a page only after the forward's fence)" : " (it snapshots pages after the forward's fence)");
        String unsafe = "transfer backend '" + backendId + "' declares neither FORWARD_SYNC nor STAGING: it does not promise to read a "
                + "page only after the forward that writes it";
        boolean isSafe = forwardSync || staging;
        return switch (setting) {
            case "off" -> new EarlySend(setting, false, "early-send-cached-prefix is off");
            case "on" -> {
                if (!isSafe) {
                    throw new IllegalArgumentException("transfer backend '" + backendId + "' lacks FORWARD_SYNC and STAGING; "
                            + "handoff.disaggregation.early-send-cached-prefix = on is unsafe with it: set it to auto or off, or use a "
                            + "backend that declares one of them (for mori: handoff.plugins.mori.forward-sync = true)");
                }
                yield new EarlySend(setting, true, "on: " + safe);
            }
            case "auto" -> isSafe
                    ? new EarlySend(setting, true, "auto: " + safe)
                    : new EarlySend(setting, false, "auto: " + unsafe);
            default -> throw new IllegalArgumentException("handoff.disaggregation.early-send-cached-prefix = " + setting
                    + ": expected auto, on or off");
        };
    }
}
