package io.handoff.demo;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What the demo reads from a prefill's {@code GET /bootstrap}: the transport its transfer backend chose and
 * the early-send decision with its reason. Fields the server does not send stay empty.
 */
public record BootstrapInfo(Optional<String> transferBackend, Optional<String> transport, EarlySend earlySend)
{
    /**
     * The early send of the cached prefix as the prefill decided it.
     *
     * @param requested the configured mode: auto, on or off
     * @param enabled whether it runs
     * @param reason why (the backend's capabilities that allowed or forbade it)
     */
    public record EarlySend(Optional<String> requested, Optional<Boolean> enabled, Optional<String> reason)
    {
        public static final EarlySend UNKNOWN = new EarlySend(Optional.empty(), Optional.empty(), Optional.empty());

        public EarlySend
        {
            requireNonNull(requested, "requested is null");
            requireNonNull(enabled, "enabled is null");
            requireNonNull(reason, "reason is null");
        }
    }

    public static final BootstrapInfo UNKNOWN = new BootstrapInfo(Optional.empty(), Optional.empty(), EarlySend.UNKNOWN);

    public BootstrapInfo
    {
        requireNonNull(transferBackend, "transferBackend is null");
        requireNonNull(transport, "transport is null");
        requireNonNull(earlySend, "earlySend is null");
    }

    public static BootstrapInfo from(JsonNode body)
    {
        JsonNode early = body.path("early_send");
        Optional<Boolean> enabled = early.path("enabled").isBoolean() ? Optional.of(early.path("enabled").booleanValue()) : Optional.empty();
        return new BootstrapInfo(text(body, "transfer_backend"), text(body, "transport"),
                new EarlySend(text(early, "requested"), enabled, text(early, "reason")));
    }

    private static Optional<String> text(JsonNode node, String field)
    {
        JsonNode value = node.path(field);
        return value.isValueNode() && !value.isNull() ? Optional.of(value.asText()) : Optional.empty();
    }
}
