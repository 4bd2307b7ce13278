package io.handoff.plugin.aiter;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.core.kv.PagedKvCache;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static io.handoff.plugin.aiter.AiterAttentionTest.MLA;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AiterProviderTest
{
    private static final PluginSettings SETTINGS = PluginSettings.empty("aiter");
    private final AiterProvider provider = new AiterProvider();

    @Test
    void isAvailableWithTheVectorApiAndDeclaresOnlyMla()
    {
        assertThat(provider.availability(SETTINGS).available()).isTrue();
        assertThat(provider.capabilityNames(SETTINGS)).containsExactly("MLA", "F32", "BF16", "F16", "PAGE_SIZE_1_256", "SPLIT_KV", "DETERMINISTIC");
    }

    @Test
    void refusesGqaAndNamesTheBackendThatRunsIt()
    {
        AttentionGeometry gqa = new AttentionGeometry(KvLayout.GQA, 8, 2, 64, 64, 0.125f);
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.F32, 128, 128, false);
            assertThatThrownBy(() -> provider.create(gqa, kv, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("supports only the MLA layout, not GQA: use attention backend 'triton'");
        }
    }

    @Test
    void refusesPoolsThatAreNotThisGeometrysLatentRows()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache separate = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.F32, 72, 60, false);
            assertThatThrownBy(() -> provider.create(MLA, separate, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("valuesInKeyRow");
            PagedKvCache wide = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.BF16, 576, 512, true);
            assertThatThrownBy(() -> provider.create(MLA, wide, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("latent rows are 576 elements with a 512-element value prefix, but the geometry needs kv_lora_rank + rope = 72");
            PagedKvCache huge = PagedKvCache.allocate(arena, 1, 1, 257, KvDtype.F32, 72, 60, true);
            assertThatThrownBy(() -> provider.create(MLA, huge, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("supports page sizes 1..256, not 257");
        }
    }

    @Test
    void decodeRefusesSplitCountsThatAreNotItsOwnRule()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, 1, 20, 16, KvDtype.F32, 72, 60, true);
            AttentionBackend backend = provider.create(MLA, kv, SETTINGS);
            DecodeMetadata tritonSplits = new DecodeMetadata(new int[] {0, 300}, new int[300], new int[] {300}, new int[] {2});
            assertThatThrownBy(() -> backend.decode(0, tritonSplits, new float[8 * 72], new float[8 * 60]))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("num_kv_splits 2 but aiter splits seq_len 300 into 3");
        }
    }
}
