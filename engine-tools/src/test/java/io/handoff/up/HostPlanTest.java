package io.handoff.up;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.OptionalLong;

import static org.assertj.core.api.Assertions.assertThat;

class HostPlanTest
{
    private static final long MIB = 1 << 20;
    private static final long GIB = 1L << 30;
    // Llama-3-8B in f16: 128 KiB of K and V per token, pages of 16 tokens
    private static final long PAGE = 128 * 1024 * 16;

    @Test
    void theCoresAreSharedEvenlyAndAGivenThreadCountStands()
    {
        assertThat(HostPlan.of(2, 16, 0, true, GIB, PAGE, OptionalLong.empty(), 0).threads()).isEqualTo(8);
        assertThat(HostPlan.of(3, 2, 0, true, GIB, PAGE, OptionalLong.empty(), 0).threads()).isEqualTo(1);
        HostPlan given = HostPlan.of(2, 4, 4, true, GIB, PAGE, OptionalLong.empty(), 0);
        assertThat(given.threads()).isEqualTo(4);
        assertThat(given.notes().getFirst()).contains("more than the 4 cores here");
    }

    @Test
    void aPoolThatFitsStaysAsConfigured()
    {
        HostPlan plan = HostPlan.of(2, 8, 0, false, 32 * MIB, PAGE, OptionalLong.of(16 * GIB), 0);

        assertThat(plan.poolBytes()).isEmpty();
        assertThat(plan.notes().get(1)).startsWith("KV pool 32 MiB per server, as configured");
    }

    @Test
    void aPoolThatDoesNotFitShrinksToWholePagesInHalfTheFreeMemoryAfterTheWeights()
    {
        // 40 GiB free, 2 servers with 8 GiB of weights each: (20 - 2 x 8) / 2 = 2 GiB each
        HostPlan plan = HostPlan.of(2, 8, 0, false, 8 * GIB, PAGE, OptionalLong.of(40 * GIB), 8 * GIB);

        assertThat(plan.poolBytes()).hasValue(2 * GIB / PAGE * PAGE);
        assertThat(plan.notes().get(1)).contains("KV pool 2048 MiB per server instead of the configured 8192 MiB");
    }

    @Test
    void aHostTooSmallGetsTheSmallestPoolAndAWarning()
    {
        HostPlan plan = HostPlan.of(4, 8, 0, false, 8 * GIB, PAGE, OptionalLong.of(8 * GIB), 16 * GIB);

        assertThat(plan.poolBytes()).hasValue(HostPlan.MIN_POOL_PAGES * PAGE);
        assertThat(plan.notes()).last().asString().contains("too little free memory for 4 servers");
    }

    @Test
    void aGivenPoolOrAnUnknownHostLeavesThePoolAlone()
    {
        assertThat(HostPlan.of(2, 8, 0, true, 8 * GIB, PAGE, OptionalLong.of(GIB), 0).poolBytes()).isEmpty();
        assertThat(HostPlan.of(2, 8, 0, false, 8 * GIB, PAGE, OptionalLong.empty(), 0).poolBytes()).isEmpty();
    }

    @Test
    void memAvailableIsReadInKibibytes()
    {
        assertThat(HostMemory.parseAvailable(List.of("MemTotal:       32000000 kB", "MemAvailable:   1000 kB"))).hasValue(1000 * 1024);
        assertThat(HostMemory.parseAvailable(List.of("MemTotal: 1 kB"))).isEmpty();
    }
}
