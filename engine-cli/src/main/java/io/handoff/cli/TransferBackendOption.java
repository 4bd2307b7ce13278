package io.handoff.cli;

import picocli.CommandLine.Option;

import java.util.Map;

/** {@code --transfer-backend}: the plugin that moves KV between a prefill and a decode (a mixin). */
public final class TransferBackendOption
{
    public static final String KEY = "handoff.disaggregation.transfer-backend";

    @Option(names = "--transfer-backend", paramLabel = "ID",
            description = "KV transfer backend (mooncake, mori, nixl, or a plugin's id; handoff plugins lists them); sets " + KEY + ".")
    public String id;

    public void applyTo(Map<String, String> overrides)
    {
        if (id != null) {
            overrides.put(KEY, id);
        }
    }
}
