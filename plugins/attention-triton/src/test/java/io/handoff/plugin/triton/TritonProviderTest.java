package io.handoff.plugin.triton;

import io.handoff.spi.PluginSettings;
import io.handoff.spi.attention.AttentionBackend;
import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.attention.KvRows;
import io.handoff.core.kv.PagedKvCache;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

import static io.handoff.plugin.triton.TritonAttentionTest.GQA;
import static io.handoff.plugin.triton.TritonAttentionTest.MLA;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TritonProviderTest
{
    private static final PluginSettings SETTINGS = PluginSettings.empty("triton");
    private final TritonProvider provider = new TritonProvider();

    @Test
    void isAvailableWithTheVectorApiAndDeclaresWhatItsTestsProve()
    {
        assertThat(provider.availability(SETTINGS).available()).isTrue();
        assertThat(provider.capabilityNames(SETTINGS)).containsExactly("MHA", "GQA", "MLA", "F32", "BF16", "F16", "LLAMA_CPP_F16", "PAGE_SIZE_1_256", "SPLIT_KV",
                "DETERMINISTIC");
    }

    @Test
    void refusesAPoolWhoseRowsDoNotMatchTheGeometry()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache narrow = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.F32, 64, 60, true);
            assertThatThrownBy(() -> provider.create(MLA, narrow, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("key rows have 64 elements but the geometry needs 1 KV heads x 72 = 72");
        }
    }

    @Test
    void refusesMlaOverAPoolWithASeparateValueRegionAndGqaOverALatentPool()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache separate = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.F32, 72, 60, false);
            assertThatThrownBy(() -> provider.create(MLA, separate, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("MLA needs a KV pool whose values are the latent prefix of the key row");
            PagedKvCache latent = PagedKvCache.allocate(arena, 1, 2, 16, KvDtype.F32, 80, 80, true);
            assertThatThrownBy(() -> provider.create(GQA, latent, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("GQA needs a KV pool with a separate value region");
        }
    }

    @Test
    void refusesPageSizesAbove256()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache huge = PagedKvCache.allocate(arena, 1, 1, 512, KvDtype.BF16, 72, 60, true);
            assertThatThrownBy(() -> provider.create(MLA, huge, SETTINGS))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("supports page sizes 1..256, not 512");
        }
    }

    @Test
    void decodeRefusesSplitCountsThatAreNotItsOwnRuleAndSlotsOutsideThePool()
    {
        try (Arena arena = Arena.ofShared()) {
            PagedKvCache kv = PagedKvCache.allocate(arena, 1, 40, 16, KvDtype.F32, 72, 60, true);
            AttentionBackend backend = provider.create(MLA, kv, SETTINGS);
            float[] q = new float[8 * 72];
            float[] out = new float[8 * 60];
            int[] indices = new int[300];
            DecodeMetadata twoSplits = new DecodeMetadata(new int[] {0, 300}, indices, new int[] {300}, new int[] {4});
            assertThatThrownBy(() -> backend.decode(0, twoSplits, q, out))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("num_kv_splits 4 but triton splits seq_len 300 into 2");
            indices[7] = 640;
            DecodeMetadata outside = new DecodeMetadata(new int[] {0, 300}, indices, new int[] {300}, new int[] {2});
            assertThatThrownBy(() -> backend.decode(0, outside, q, out))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("kv_indices[7] = 640 is outside the pool's 640 slots");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"BF16", "F16"})
    void loadsSixteenBitRowsExactlyAsKvRowsDoes(KvDtype dtype)
    {
        Random random = new Random(21);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(2L * 100, 64);
            float[] source = new float[100];
            for (int i = 0; i < source.length; i++) {
                source[i] = (float) random.nextGaussian() * 1000;
            }
            source[5] = Float.NaN;
            source[6] = Float.NEGATIVE_INFINITY;
            source[7] = -0.0f;
            source[8] = Float.MIN_VALUE;
            KvRows.store(region, 0, dtype, source, 0, source.length);
            for (int offset : new int[] {0, 2, 6}) {
                int count = 97 - offset;
                float[] expected = new float[count];
                float[] actual = new float[count + 3];
                KvRows.load(region, 2L * offset, dtype, expected, 0, count);
                KeyTile.loadRow(region, 2L * offset, dtype, actual, 3, count);
                for (int i = 0; i < count; i++) {
                    assertThat(Float.floatToRawIntBits(actual[3 + i])).as("element %d", offset + i).isEqualTo(Float.floatToRawIntBits(expected[i]));
                }
            }
        }
    }
}
