package com.example.handoff.loopback;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.ProviderKind;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LoopbackTransferProviderTest
{
    private final LoopbackTransferProvider provider = new LoopbackTransferProvider();
    private final PluginSettings settings = PluginSettings.empty("example-loopback");

    @Test
    void isATransferBackendThatDeclaresOnlySameHost()
    {
        assertThat(provider.id()).isEqualTo("example-loopback");
        assertThat(provider.kind()).isEqualTo(ProviderKind.TRANSFER);
        assertThat(provider.capabilityNames(settings)).containsExactly("SAME_HOST");
    }

    @Test
    void isAvailableWithoutAnySettings()
    {
        assertThat(provider.availability(settings).available()).isTrue();
    }
}
