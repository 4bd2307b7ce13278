package io.handoff.bench.scheduler;

import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.Sampler;
import io.handoff.core.model.SamplingParams;
import io.handoff.core.model.Transformer;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FixedLogitsModelTest
{
    @Test
    void forwardReturnsOneFixedRowPerRequestThatGreedySamplingTurnsIntoItsToken()
    {
        ModelConfig config = ModelConfig.byName("tiny-mla");
        FixedLogitsModel model = new FixedLogitsModel(config);
        ForwardBatch batch = ForwardBatch.builder()
                .extend(new int[] {1, 2, 3}, 0, new int[] {0, 1, 2, 3})
                .decode(5, 2, new int[] {4, 5, 6})
                .decode(6, 0, new int[] {7})
                .build(seqLen -> 1);

        float[][] logits = model.forward(batch, null, null, Transformer.LayerHook.NONE);

        assertThat(model.config()).isSameAs(config);
        assertThat(logits).hasNumberOfRows(3);
        for (float[] row : logits) {
            assertThat(row).hasSize(config.vocabSize());
            assertThat(Sampler.sample(row, SamplingParams.GREEDY, 0)).isEqualTo(model.token());
        }
        assertThat(model.token()).isEqualTo('a');
    }
}
