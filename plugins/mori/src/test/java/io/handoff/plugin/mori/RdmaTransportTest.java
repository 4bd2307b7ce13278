package io.handoff.plugin.mori;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The ibverbs probe: every outcome is a reason an operator can act on, never a crash, and never a usable path in this version. */
class RdmaTransportTest
{
    @Test
    void theProbeOnThisMachineSaysWhyThereIsNoRdmaPath()
    {
        RdmaTransport.Probe probe = RdmaTransport.probe();

        assertThat(probe.usable()).isFalse();
        assertThat(probe.unavailable()).hasValueSatisfying(reason -> assertThat(reason)
                .containsAnyOf("not found", "Failed to get IB devices list", "no RDMA device", "no RDMA WRITE data path")
                .endsWith("uses shared memory only"));
        assertThat(probe.summary()).isEqualTo("unavailable: " + probe.unavailable().orElseThrow());
        // Found devices are still reported, so an operator sees the NIC and why it is not used.
        if (!probe.devices().isEmpty()) {
            assertThat(probe.unavailable().orElseThrow()).startsWith("found " + String.join(", ", probe.devices()));
        }
        assertThat(RdmaTransport.probe()).as("probed once").isSameAs(probe);
    }

    @Test
    void aMissingLibraryIsAReasonNotACrash()
    {
        RdmaTransport.Probe probe = RdmaTransport.probe("libibverbs-handoff-absent.so.1");

        assertThat(probe.usable()).isFalse();
        assertThat(probe.devices()).isEmpty();
        assertThat(probe.summary()).startsWith("unavailable: libibverbs-handoff-absent.so.1 not found: install rdma-core");
    }

    @Test
    void aLibraryThatIsNotIbverbsIsRefusedByName()
    {
        RdmaTransport.Probe probe = RdmaTransport.probe("libc.so.6");

        assertThat(probe.usable()).isFalse();
        assertThat(probe.summary()).contains("libc.so.6 lacks ibv_get_device_list").contains("it is not libibverbs");
    }
}
