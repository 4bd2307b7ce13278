package io.handoff.core.kv;

import io.handoff.spi.attention.AttentionGeometry;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvLayout;
import io.handoff.spi.attention.KvRows;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KvPoolTest
{
    // Llama-style GQA: 2 KV heads of 8 dims, values separate
    private static final KvGeometry GQA_F32 = new KvGeometry(3, 16, 16, false, KvDtype.F32, 4);
    // DeepSeek-style MLA: one latent row of 12 (kv_lora_rank 8 + rope 4), V inside it
    private static final KvGeometry MLA_BF16 = new KvGeometry(2, 12, 8, true, KvDtype.BF16, 16);

    @Test
    void separateValueRegionsArePerLayerKeyThenValueWithPageStrides()
    {
        try (KvPool pool = KvPool.allocate(GQA_F32, 5)) {
            List<KvRegion> regions = pool.regions();
            assertThat(regions).extracting(KvRegion::layer).containsExactly(0, 0, 1, 1, 2, 2);
            assertThat(regions).extracting(KvRegion::kind).containsExactly(
                    KvRegion.Kind.KEY, KvRegion.Kind.VALUE, KvRegion.Kind.KEY, KvRegion.Kind.VALUE, KvRegion.Kind.KEY, KvRegion.Kind.VALUE);
            for (KvRegion region : regions) {
                // 4 tokens x 16 elements x 4 bytes
                assertThat(region.pageStride()).isEqualTo(256);
                assertThat(region.byteLength()).isEqualTo(5 * 256);
                assertThat(region.pages()).isEqualTo(5);
                assertThat(region.address() % KvGeometry.REGION_ALIGNMENT).isZero();
                assertThat(region.fileOffset()).isEqualTo(-1);
            }
            assertThat(regions.get(0).segment()).isSameAs(pool.view().keys(0));
            assertThat(regions.get(1).segment()).isSameAs(pool.view().values(0));
            assertDisjoint(regions);
            assertThat(pool.pagePool().totalPages()).isEqualTo(5);
            assertThat(pool.view().pages()).isEqualTo(5);
            assertThat(GQA_F32.bytesPerPage()).isEqualTo(3 * 2 * 256);
        }
    }

    @Test
    void latentLayoutHasOneBf16RegionPerLayerThatHoldsValues()
    {
        try (KvPool pool = KvPool.allocate(MLA_BF16, 3)) {
            KvCacheView view = pool.view();
            assertThat(pool.regions()).hasSize(2).allSatisfy(region -> {
                assertThat(region.kind()).isEqualTo(KvRegion.Kind.KEY);
                // 16 tokens x 12 elements x 2 bytes
                assertThat(region.pageStride()).isEqualTo(384);
                assertThat(region.byteLength()).isEqualTo(3 * 384);
            });
            assertThat(view.values(1)).isSameAs(view.keys(1));
            assertThat(MLA_BF16.valuePageStride()).isEqualTo(MLA_BF16.keyPageStride());
            assertThat(MLA_BF16.bytesPerPage()).isEqualTo(2 * 384);
        }
    }

    @Test
    void bf16HalvesTheBytesOfF32()
    {
        KvGeometry f32 = new KvGeometry(2, 12, 8, true, KvDtype.F32, 16);
        assertThat(f32.bytesPerPage()).isEqualTo(2 * MLA_BF16.bytesPerPage());
        assertThat(f32.footprintBytes(7)).isEqualTo(2 * MLA_BF16.footprintBytes(7));
    }

    @Test
    void geometryFollowsTheAttentionLayout()
    {
        AttentionGeometry mla = new AttentionGeometry(KvLayout.MLA, 4, 1, 12, 8, 0.25f);
        assertThat(KvGeometry.of(mla, 2, KvDtype.BF16, 16)).isEqualTo(MLA_BF16);
        AttentionGeometry gqa = new AttentionGeometry(KvLayout.GQA, 8, 2, 8, 8, 0.35f);
        assertThat(KvGeometry.of(gqa, 3, KvDtype.F32, 4)).isEqualTo(GQA_F32);
        assertThatThrownBy(() -> new KvGeometry(1, 8, 8, false, KvDtype.F32, 257)).hasMessageContaining("1..256");
        assertThatThrownBy(() -> new KvGeometry(1, 8, 8, false, KvDtype.F32, 0)).hasMessageContaining("1..256");
    }

    @Test
    void pagesFittingIsTheLargestCountWhoseFootprintFitsTheBudget()
    {
        // a row of 3 BF16 elements makes regions that need alignment padding
        KvGeometry odd = new KvGeometry(2, 3, 3, false, KvDtype.BF16, 1);
        for (KvGeometry geometry : List.of(GQA_F32, MLA_BF16, odd)) {
            for (long budget : new long[] {0, 1, 1000, 4096, 123_457, 10_000_000}) {
                int pages = KvPool.pagesFitting(budget, geometry);
                assertThat(geometry.footprintBytes(pages)).isLessThanOrEqualTo(budget);
                assertThat(geometry.footprintBytes(pages + 1)).as("%s budget %d", geometry, budget).isGreaterThan(budget);
            }
        }
        assertThat(KvPool.pagesFitting(GQA_F32.footprintBytes(10), GQA_F32)).isEqualTo(10);
    }

    @Test
    void closeFreesTheRegions()
    {
        KvPool pool = KvPool.allocate(GQA_F32, 2);
        KvCacheView view = pool.view();
        view.keys(0).set(ValueLayout.JAVA_FLOAT, 0, 1.5f);
        assertThat(view.keys(0).get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(1.5f);
        pool.close();
        pool.close();
        assertThat(pool.isOpen()).isFalse();
        assertThatThrownBy(() -> view.keys(0).get(ValueLayout.JAVA_FLOAT, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void sharedFileHoldsTheRegionsAtTheirFileOffsets(@TempDir Path dir)
            throws IOException
    {
        Path file = dir.resolve("kv.pool");
        Files.write(file, new byte[] {9, 9, 9});
        try (KvPool pool = KvPool.mapShared(GQA_F32, 3, file)) {
            assertThat(pool.sharedFile()).contains(file);
            assertThat(Files.size(file)).isEqualTo(GQA_F32.footprintBytes(3)).isEqualTo(pool.footprintBytes());
            List<KvRegion> regions = pool.regions();
            assertThat(regions.get(0).fileOffset()).isZero();
            for (int i = 1; i < regions.size(); i++) {
                KvRegion previous = regions.get(i - 1);
                assertThat(regions.get(i).fileOffset()).isEqualTo(previous.fileOffset() + KvGeometry.alignUp(previous.byteLength()));
                assertThat(regions.get(i).address() % KvGeometry.REGION_ALIGNMENT).isZero();
            }
            // the old contents are gone
            assertThat(pool.view().keys(0).get(ValueLayout.JAVA_BYTE, 0)).isZero();

            // layer 1's value row of slot 5 (page 1, offset 1), written through the view, is in the file
            KvRegion region = regions.get(3);
            assertThat(region.layer()).isEqualTo(1);
            assertThat(region.kind()).isEqualTo(KvRegion.Kind.VALUE);
            float[] row = new float[16];
            row[0] = 2.5f;
            row[15] = -7f;
            KvRows.store(pool.view().values(1), 5 * GQA_F32.keyRowBytes(), KvDtype.F32, row, 0, 16);
            assertThat(region.page(1).get(ValueLayout.JAVA_FLOAT_UNALIGNED, 64)).isEqualTo(2.5f);

            ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.nativeOrder());
            long rowStart = region.fileOffset() + 5 * GQA_F32.keyRowBytes();
            assertThat(bytes.getFloat((int) rowStart)).isEqualTo(2.5f);
            assertThat(bytes.getFloat((int) rowStart + 15 * 4)).isEqualTo(-7f);
        }
        assertThat(file).exists();
    }

    private static void assertDisjoint(List<KvRegion> regions)
    {
        for (KvRegion a : regions) {
            for (KvRegion b : regions) {
                if (a != b) {
                    assertThat(a.address() + a.byteLength() <= b.address() || b.address() + b.byteLength() <= a.address())
                            .as("%s overlaps %s", a, b).isTrue();
                }
            }
        }
    }
}
