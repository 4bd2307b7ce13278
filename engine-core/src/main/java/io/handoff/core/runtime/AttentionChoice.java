package io.handoff.core.runtime;

import com.typesafe.config.Config;
import io.handoff.core.model.parallel.TensorShard;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackendProvider;
import io.handoff.spi.attention.AttentionCapabilities;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvDtype;

/**
 * The attention plugin a process runs ({@code handoff.attention.backend}), its settings, and the geometry it is created
 * with (a tensor-parallel rank's heads, the arithmetic resolved), checked against what the plugin declares.
 */
record AttentionChoice(String id, AttentionBackendProvider provider, PluginSettings settings, AttentionGeometry geometry)
{
    static AttentionChoice of(Engine engine, ModelSource source, TensorShard shard, int pageSize, KvDtype dtype)
    {
        Config config = engine.config().config();
        String id = config.getString("handoff.attention.backend");
        AttentionBackendProvider provider = (AttentionBackendProvider) engine.plugins().require(id, "attention", "handoff.attention.backend")
                .provider().orElseThrow();
        PluginSettings settings = engine.config().pluginSettings(id);
        AttentionCapabilities capabilities = provider.capabilities(settings);
        AttentionGeometry geometry = shard.attention(source.config().attentionGeometry()
                .withArithmetic(ComputeEngine.attentionArithmetic(config, source, capabilities)));
        capabilities.refusal(id, geometry, pageSize, dtype).ifPresent(reason -> {
            throw new IllegalArgumentException(reason + " (it declares " + capabilities.names() + "); choose another backend ("
                    + engine.plugins().available("attention") + ") or model");
        });
        return new AttentionChoice(id, provider, settings, geometry);
    }
}
