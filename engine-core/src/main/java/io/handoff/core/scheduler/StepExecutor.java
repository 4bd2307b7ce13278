package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultInjector;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.grammar.GrammarException;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.Sampler;
import io.handoff.core.model.SamplingContext;
import io.handoff.core.model.ModelRunner;
import io.handoff.core.model.Transformer;
import io.handoff.spi.attention.AttentionBackend;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

import java.util.Arrays;

/**
 * The compute-thread side of a step: builds the forward batch from a {@link StepPlan}, runs the model
 * (with the "forward: after layer" fault point after each layer) and samples every request whose
 * logits the step produces. Decode inputs are read here, not at scheduling time, because in overlap
 * mode the previous step, earlier on this same thread, is what samples them.
 */
final class StepExecutor
{
    private static final Logger log = LogManager.getLogger(StepExecutor.class);

    private final ModelRunner model;
    private final KvPool kv;
    private final AttentionBackend attention;
    private final FaultInjector faults;
    private final DecodeMetadataProbe probe;

    StepExecutor(ModelRunner model, KvPool kv, AttentionBackend attention, FaultInjector faults, DecodeMetadataProbe probe)
    {
        this.model = model;
        this.kv = kv;
        this.attention = attention;
        this.faults = faults;
        this.probe = probe;
    }

    void execute(StepPlan plan)
    {
        ForwardBatch.Builder builder = ForwardBatch.builder();
        for (StepPlan.Chunk chunk : plan.chunks()) {
            builder.extend(Arrays.copyOfRange(chunk.request().request.promptIds(), chunk.from(), chunk.to()), chunk.from(), chunk.slots());
        }
        for (StepPlan.Decode decode : plan.decodes()) {
            builder.decode(decode.request().outputs[decode.index() - 1], decode.position(), decode.slots());
        }
        int[] owners = new int[plan.chunks().size() + plan.decodes().size()];
        int at = 0;
        for (StepPlan.Chunk chunk : plan.chunks()) {
            owners[at++] = chunk.request().owner;
        }
        for (StepPlan.Decode decode : plan.decodes()) {
            owners[at++] = decode.request().owner;
        }
        ForwardBatch batch = builder.build(attention::numKvSplits).withOwners(owners);
        long step = plan.step();
        if (probe.enabled()) {
            // On this thread every earlier step has finished, so the rows the probe samples are final.
            probe.inspect(step, batch, plan.decodes()).forEach(log::info);
        }
        Transformer.LayerHook hook = layer -> faults.hit(FaultPoint.FORWARD_AFTER_LAYER, step, layer);
        PromptLogitRows rows = PromptLogitRows.of(plan, batch);
        float[][] logits = rows.any() ? model.forwardRows(batch, kv.view(), attention, hook, rows.rows())
                : model.forward(batch, kv.view(), attention, hook);
        int row = 0;
        for (StepPlan.Chunk chunk : plan.chunks()) {
            row = promptLogprobs(chunk, logits, row);
            if (chunk.last()) {
                sample(chunk.request(), 0, logits[row]);
            }
            row++;
        }
        for (StepPlan.Decode decode : plan.decodes()) {
            sample(decode.request(), decode.index(), logits[row++]);
        }
    }

    /**
     * The log probabilities of the prompt tokens that follow this chunk's positions, from the rows {@link PromptLogitRows} put
     * before the chunk's last-token row (and from that row itself on a chunk that is not the prompt's last); returns the
     * index of the last-token row.
     */
    private static int promptLogprobs(StepPlan.Chunk chunk, float[][] logits, int row)
    {
        ScheduledRequest request = chunk.request();
        for (int position = PromptLogitRows.firstNeeded(chunk); position < chunk.to() - 1; position++) {
            request.promptLogprob(position, logits[row++]);
        }
        if (request.needsPromptLogits(chunk.to() - 1)) {
            request.promptLogprob(chunk.to() - 1, logits[row]);
        }
        return row;
    }

    private static void sample(ScheduledRequest request, int index, float[] logits)
    {
        long[] allowed = null;
        if (request.matcher != null && request.constraintError == null) {
            try {
                request.matcher.catchUp(request.outputs, index);
                allowed = request.matcher.allowed();
            }
            catch (GrammarException e) {
                request.constraintError = e.getMessage(); // the request ends with this error when the token is produced
            }
        }
        request.outputs[index] = Sampler.sample(logits, request.request.sampling(), new SamplingContext(request.outputs, index, request.endIds, allowed));
        request.outputLogprob(index, logits);
        if (request.request.returnLogits()) {
            synchronized (request.logits) {
                while (request.logits.size() <= index) {
                    request.logits.add(null);
                }
                request.logits.set(index, logits.clone());
            }
        }
    }
}
