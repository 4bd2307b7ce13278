package io.handoff.core.scheduler;

import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.spi.attention.KvCacheView;
import io.handoff.spi.attention.KvDtype;
import io.handoff.spi.attention.KvRows;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.IntUnaryOperator;
import java.util.stream.IntStream;

import static io.handoff.core.scheduler.SchedulerFixture.greedy;
import static io.handoff.core.scheduler.SchedulerFixture.prompt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The decode-metadata probe (I3): silent on a correct engine, loud on metadata that would make attention read the wrong KV. */
class DecodeMetadataProbeTest
{
    private static final int PAGE_SIZE = 4;
    private static final IntUnaryOperator SPLITS = seqLen -> Math.ceilDiv(seqLen, 8);

    @ParameterizedTest
    @EnumSource(value = DecodeMetadataProbe.Mode.class, names = {"CHECK", "DUMP"})
    void onARealEngineTheProbeFindsNothingAndChangesNoOutput(DecodeMetadataProbe.Mode mode)
    {
        // Shared prefixes (radix cache hits), chunked prompts, overlap: every way a decode's metadata is assembled.
        int[] prefix = prompt(40, 3);
        List<GenerateRequest> requests = IntStream.range(0, 6)
                .mapToObj(i -> greedy("r" + i, SchedulerFixture.concat(prefix, prompt(3 + 7 * i, 100 + i)), 9))
                .toList();
        List<GenerateResult> reference;
        try (SchedulerFixture plain = SchedulerFixture.builder("tiny-mla").overlap(true).chunk(32).build()) {
            reference = plain.runAll(requests);
        }
        try (SchedulerFixture probed = SchedulerFixture.builder("tiny-mla").overlap(true).chunk(32).probe(mode).build()) {
            List<GenerateResult> results = probed.runAll(requests);

            for (int i = 0; i < requests.size(); i++) {
                assertThat(results.get(i).error()).isEmpty();
                assertThat(results.get(i).outputIds()).isEqualTo(reference.get(i).outputIds());
            }
        }
    }

    @Test
    void consistentMetadataPassesAndTheDumpSaysWhatAttentionReads()
    {
        try (KvPool pool = pool()) {
            KvCacheView kv = pool.view();
            int[] pages = {5, 2};
            writeRows(kv, pages, 7);
            DecodeMetadataProbe probe = new DecodeMetadataProbe(DecodeMetadataProbe.Mode.DUMP, kv, SPLITS);

            List<String> dump = probe.inspect(3, batch(pages, 6, SPLITS), List.of(decode("req-a", pages, 6)));

            assertThat(dump).singleElement().asString()
                    .startsWith("decode-metadata probe, step 3, request req-a: seq_len 7, kv_indptr [0, 7), kv_indices [20, 21, 22, 23] ... "
                            + "[23, 8, 9, 10], num_kv_splits 1")
                    .contains("layer-0 key row norms {0=", ", 2=", ", 5=");
            assertThat(new DecodeMetadataProbe(DecodeMetadataProbe.Mode.CHECK, kv, SPLITS)
                    .inspect(3, batch(pages, 6, SPLITS), List.of(decode("req-a", pages, 6)))).isEmpty();
        }
    }

    @Test
    void aSlotThatIsNotTheRequestsOwnPageFailsNamingPositionSlotAndPage()
    {
        try (KvPool pool = pool()) {
            KvCacheView kv = pool.view();
            int[] mapped = {5, 2};
            writeRows(kv, mapped, 7);
            // req_to_token says pool page 2 for positions 4..7, the request's page list says pool page 3.
            int[] held = {5, 3};

            assertThatThrownBy(() -> probe(kv).inspect(9, batch(mapped, 6, SPLITS), List.of(decode("req-b", held, 6))))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("decode-metadata probe, step 9, request req-b: kv_indices reads position 4 from slot 8 but the request's page 1 "
                            + "is pool page 3 (slot 12)");
        }
    }

    @Test
    void aNeverWrittenKvRowFailsNamingItsPosition()
    {
        try (KvPool pool = pool()) {
            KvCacheView kv = pool.view();
            int[] pages = {5, 2};
            writeRows(kv, pages, 2); // positions 2.. were never written (a page the transfer did not fill)

            assertThatThrownBy(() -> probe(kv).inspect(1, batch(pages, 6, SPLITS), List.of(decode("req-c", pages, 6))))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("decode-metadata probe, step 1, request req-c: the layer-0 key row of position 2 (slot 22) is all zeros: "
                            + "it was never written, yet attention would read it");
        }
    }

    @Test
    void numKvSplitsThatDisagreeWithTheAttentionBackendFail()
    {
        try (KvPool pool = pool()) {
            KvCacheView kv = pool.view();
            int[] pages = {5, 2};
            writeRows(kv, pages, 7);

            assertThatThrownBy(() -> probe(kv).inspect(4, batch(pages, 6, seqLen -> 3), List.of(decode("req-d", pages, 6))))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("decode-metadata probe, step 4, request req-d: num_kv_splits is 3 but the attention backend splits seq_len 7 into 1");
        }
    }

    @Test
    void offInspectsNothing()
    {
        try (KvPool pool = pool()) {
            KvCacheView kv = pool.view();
            DecodeMetadataProbe off = new DecodeMetadataProbe(DecodeMetadataProbe.Mode.OFF, kv, SPLITS);
            // Rows never written and a page list that disagrees: off does not look.
            assertThat(off.enabled()).isFalse();
            assertThat(off.inspect(1, batch(new int[] {5, 2}, 6, SPLITS), List.of(decode("req-e", new int[] {0, 0}, 6)))).isEmpty();
        }
    }

    private static DecodeMetadataProbe probe(KvCacheView kv)
    {
        return new DecodeMetadataProbe(DecodeMetadataProbe.Mode.CHECK, kv, SPLITS);
    }

    private static KvPool pool()
    {
        ModelConfig config = ModelConfig.byName("tiny-gqa");
        return KvPool.allocate(KvGeometry.of(config.attentionGeometry(), config.layers(), KvDtype.F32, PAGE_SIZE), 8);
    }

    /** A non-zero layer-0 key row at positions {@code 0 .. count-1} of the request mapped to {@code pages}. */
    private static void writeRows(KvCacheView kv, int[] pages, int count)
    {
        float[] row = new float[kv.keyRowElements()];
        Arrays.fill(row, 0.5f);
        for (int position = 0; position < count; position++) {
            KvRows.store(kv.keys(0), slot(pages, position) * kv.keyRowBytes(), kv.dtype(), row, 0, row.length);
        }
    }

    private static int slot(int[] pages, int position)
    {
        return pages[position / PAGE_SIZE] * PAGE_SIZE + position % PAGE_SIZE;
    }

    /** One decode at {@code position} over req_to_token mapped to {@code pages}. */
    private static ForwardBatch batch(int[] pages, int position, IntUnaryOperator splits)
    {
        int[] reqToToken = IntStream.range(0, pages.length * PAGE_SIZE).map(p -> slot(pages, p)).toArray();
        return ForwardBatch.builder().decode(65, position, reqToToken).build(splits);
    }

    private static StepPlan.Decode decode(String rid, int[] pages, int position)
    {
        ScheduledRequest request = new ScheduledRequest(greedy(rid, new int[] {1, 2, 3}, 4), TokenListener.NONE, 0, 256, Set.of());
        return new StepPlan.Decode(request, 1, position, new int[0], pages);
    }
}
