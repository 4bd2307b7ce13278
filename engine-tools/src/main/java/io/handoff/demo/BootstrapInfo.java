package io.handoff.demo;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Optional;
import java.util.OptionalInt;

import static java.util.Objects.requireNonNull;

/**
 * What the demo reads from a prefill's {@code GET /bootstrap}: the transport its transfer backend chose, the
 * early-send decision with its reason, and the shape of a token's KV. Fields the server does not send stay empty.
 */
public record BootstrapInfo(Optional<String> transferBackend, Optional<String> transport, EarlySend earlySend, Optional<KvShape> kv,
        OptionalInt tensorParallel)
{
    /**
     * One token's KV in the prefill's pool, as its {@code kv} object tells it.
     *
     * @param layout MLA, GQA or MHA
     * @param heads KV heads: 1 for MLA's latent row
     * @param headDim elements of one head's key row (for MLA {@code kv_lora_rank + qk_rope_head_dim})
     * @param bytesPerToken bytes one token's KV takes in every layer: what a prefill sends per prompt token
     */
    public record KvShape(String layout, int heads, int headDim, String dtype, long bytesPerToken)
    {
        public KvShape
        {
            requireNonNull(layout, "layout is null");
            requireNonNull(dtype, "dtype is null");
        }

        static Optional<KvShape> from(JsonNode kv)
        {
            if (!kv.path("layout").isTextual() || !kv.path("heads").isInt() || !kv.path("head_dim").isInt() || !kv.path("dtype").isTextual()
                    || !kv.path("bytes_per_token").canConvertToLong()) {
                return Optional.empty();
            }
            return Optional.of(new KvShape(kv.get("layout").asText(), kv.get("heads").asInt(), kv.get("head_dim").asInt(), kv.get("dtype").asText(),
                    kv.get("bytes_per_token").asLong()));
        }
    }

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
        requireNonNull(kv, "kv is null");
        requireNonNull(tensorParallel, "tensorParallel is null");
    }

    public BootstrapInfo(Optional<String> transferBackend, Optional<String> transport, EarlySend earlySend, Optional<KvShape> kv)
    {
        this(transferBackend, transport, earlySend, kv, OptionalInt.empty());
    }

    /** A prefill's answer without the KV shape. */
    public BootstrapInfo(Optional<String> transferBackend, Optional<String> transport, EarlySend earlySend)
    {
        this(transferBackend, transport, earlySend, Optional.empty());
    }

    public static BootstrapInfo from(JsonNode body)
    {
        JsonNode early = body.path("early_send");
        Optional<Boolean> enabled = early.path("enabled").isBoolean() ? Optional.of(early.path("enabled").booleanValue()) : Optional.empty();
        return new BootstrapInfo(text(body, "transfer_backend"), text(body, "transport"),
                new EarlySend(text(early, "requested"), enabled, text(early, "reason")), KvShape.from(body.path("kv")),
                body.path("layout").path("tp").isInt() ? OptionalInt.of(body.path("layout").path("tp").asInt()) : OptionalInt.empty());
    }

    private static Optional<String> text(JsonNode node, String field)
    {
        JsonNode value = node.path(field);
        return value.isValueNode() && !value.isNull() ? Optional.of(value.asText()) : Optional.empty();
    }
}
