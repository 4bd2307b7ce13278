package io.handoff.spi.transfer;

import io.handoff.spi.HandoffProvider;
import io.handoff.spi.PluginSettings;
import io.handoff.spi.ProviderKind;

import java.util.List;
import java.util.Set;

/**
 * A KV-transfer backend: moves pages between a prefill's and a decode's KV pools. The room state
 * machine, deadlines, aborts and release policy live in the core; a backend only moves bytes and
 * declares what it guarantees.
 */
public interface TransferBackendProvider
        extends HandoffProvider
{
    @Override
    default ProviderKind kind()
    {
        return ProviderKind.TRANSFER;
    }

    /** The guarantees this backend makes under these settings (they may depend on them, e.g. a transport choice). */
    Set<TransferCapability> capabilities(PluginSettings settings);

    /**
     * Opens the backend for one process. Called only when {@link #availability} said available. A
     * provider without a data path (a template, a capability-only test double) keeps this default,
     * and the core refuses to use it for transfers with this message.
     */
    default TransferBackend open(TransferContext context, PluginSettings settings)
    {
        throw new UnsupportedOperationException("transfer backend '" + id() + "' has no data path");
    }

    @Override
    default List<String> capabilityNames(PluginSettings settings)
    {
        return capabilities(settings).stream().map(Enum::name).sorted().toList();
    }
}
