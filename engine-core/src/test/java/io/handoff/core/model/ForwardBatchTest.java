package io.handoff.core.model;

import io.handoff.spi.attention.DecodeMetadata;
import io.handoff.spi.attention.ExtendMetadata;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ForwardBatchTest
{
    @Test
    void builderPutsExtendTokensFirstAndTakesSlotsFromReqToToken()
    {
        int[] decodeRow = {40, 41, 42, 43, 99};
        int[] extendRow = {10, 11, 12, 13, 14, 15};
        ForwardBatch batch = ForwardBatch.builder()
                .decode(7, 3, decodeRow)
                .extend(new int[] {1, 2, 3}, 2, extendRow)
                .build(seqLen -> 1 + seqLen / 4);
        assertThat(batch.tokens()).containsExactly(1, 2, 3, 7);
        assertThat(batch.positions()).containsExactly(2, 3, 4, 3);
        assertThat(batch.slots()).containsExactly(12, 13, 14, 43);
        assertThat(batch.extend().kvIndices()).containsExactly(10, 11, 12, 13, 14);
        assertThat(batch.decode().kvIndices()).containsExactly(40, 41, 42, 43);
        assertThat(batch.decode().numKvSplits()).containsExactly(2);
        assertThat(batch.lastTokenRows()).containsExactly(2, 3);
    }

    @Test
    void rejectsATokenWhoseSlotIsNotTheOneAttentionReads()
    {
        ExtendMetadata extend = new ExtendMetadata(new int[] {0, 2}, new int[] {0, 2}, new int[] {5, 6}, new int[] {0}, new int[] {2});
        DecodeMetadata none = new DecodeMetadata(new int[] {0}, new int[0], new int[0], new int[0]);
        assertThat(new ForwardBatch(new int[] {1, 2}, new int[] {0, 1}, new int[] {5, 6}, extend, none).size()).isEqualTo(2);
        assertThatThrownBy(() -> new ForwardBatch(new int[] {1, 2}, new int[] {0, 1}, new int[] {5, 7}, extend, none))
                .hasMessage("token 1: position 1 slot 7 but the metadata says position 1 slot 6");
    }
}
