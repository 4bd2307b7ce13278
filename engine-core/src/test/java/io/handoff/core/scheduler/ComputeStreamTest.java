package io.handoff.core.scheduler;

import io.handoff.core.fault.FaultPlan;
import io.handoff.core.fault.FaultPlan.Match;
import io.handoff.core.fault.FaultPoint;
import io.handoff.core.fault.InjectedFault;
import io.handoff.core.kv.KvGeometry;
import io.handoff.core.kv.KvPool;
import io.handoff.core.model.ForwardBatch;
import io.handoff.core.model.ModelConfig;
import io.handoff.core.model.Transformer;
import io.handoff.spi.attention.KvDtype;
import io.handoff.testkit.model.ReferenceAttention;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static io.handoff.core.scheduler.SchedulerFixture.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The compute stream, its fences and the "forward: after layer" point, without a scheduler. */
class ComputeStreamTest
{
    private static final int LAYERS = ModelConfig.byName("tiny-gqa").layers();

    /** A forward of a short prompt that records each finished layer and then hits the fault point. */
    private static Runnable forward(KvPool kv, FaultPlan faults, long step, List<String> trace)
    {
        Transformer model = SchedulerFixture.model("tiny-gqa");
        int[] tokens = SchedulerFixture.prompt(8, step);
        int[] slots = IntStream.range(0, tokens.length).map(i -> (int) step * 16 + i).toArray();
        ForwardBatch batch = ForwardBatch.builder().extend(tokens, 0, slots).build(length -> 1);
        return () -> model.forward(batch, kv.view(), new ReferenceAttention(model.config().attentionGeometry(), kv.view()), layer -> {
            trace.add("step " + step + " layer " + layer);
            faults.hit(FaultPoint.FORWARD_AFTER_LAYER, step, layer);
        });
    }

    private static KvPool pool()
    {
        ModelConfig config = ModelConfig.byName("tiny-gqa");
        return KvPool.allocate(KvGeometry.of(config.attentionGeometry(), config.layers(), KvDtype.F32, 16), 4);
    }

    @Test
    void fenceCompletesOnlyAfterEveryLayerAndStepsRunInOrder()
            throws Exception
    {
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate gate = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(1));
        List<String> trace = new CopyOnWriteArrayList<>();
        try (KvPool kv = pool(); ComputeStream stream = new ComputeStream("test-compute")) {
            Fence first = stream.submit(0, forward(kv, faults, 0, trace));
            Fence second = stream.submit(1, forward(kv, faults, 1, trace));
            first.onComplete(() -> trace.add("fence 0"));
            // A fence wakes its waiters before it runs its callbacks: wait for the callback itself, not the fence.
            CountDownLatch secondHeard = new CountDownLatch(1);
            second.onComplete(() -> {
                trace.add("fence 1");
                secondHeard.countDown();
            });
            gate.awaitParked(TIMEOUT);

            assertThat(trace).containsExactly("step 0 layer 0", "step 0 layer 1");
            assertThat(first.isDone()).isFalse();
            assertThat(second.isDone()).isFalse();
            assertThatThrownBy(() -> first.await(Duration.ofMillis(1))).isInstanceOf(java.util.concurrent.TimeoutException.class);

            gate.release();
            second.await(TIMEOUT);
            assertThat(secondHeard.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            assertThat(first.isDone()).isTrue();
            assertThat(first.failed()).isFalse();
            assertThat(second).hasToString("Fence[step 1, done]");
            List<String> expected = new java.util.ArrayList<>();
            for (int step = 0; step < 2; step++) {
                for (int layer = 0; layer < LAYERS; layer++) {
                    expected.add("step " + step + " layer " + layer);
                }
                expected.add("fence " + step);
            }
            assertThat(trace).containsExactlyElementsOf(expected);
        }
    }

    @Test
    void failedForwardFailsItsFenceOnlyAndLaterStepsStillRun()
            throws Exception
    {
        FaultPlan faults = new FaultPlan();
        faults.fail(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.is(2), 1);
        List<String> trace = new CopyOnWriteArrayList<>();
        try (KvPool kv = pool(); ComputeStream stream = new ComputeStream("test-compute")) {
            Fence failed = stream.submit(0, forward(kv, faults, 0, trace));
            Fence next = stream.submit(1, forward(kv, faults, 1, trace));
            next.await(TIMEOUT);

            assertThat(failed.failed()).isTrue();
            assertThat(failed).hasToString("Fence[step 0, failed]");
            assertThatThrownBy(() -> failed.await(TIMEOUT))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("step 0 failed")
                    .cause().isInstanceOf(InjectedFault.class).hasMessage("injected fault at forward: after layer (0, 2)");
            assertThat(trace).startsWith("step 0 layer 0", "step 0 layer 1", "step 0 layer 2", "step 1 layer 0");
            assertThat(next.failed()).isFalse();
        }
    }

    @Test
    void closingTheStreamFailsAParkedStepInsteadOfHanging()
    {
        FaultPlan faults = new FaultPlan();
        FaultPlan.Gate gate = faults.park(FaultPoint.FORWARD_AFTER_LAYER, Match.is(0), Match.ANY);
        try (KvPool kv = pool()) {
            ComputeStream stream = new ComputeStream("test-compute");
            Fence parked = stream.submit(0, forward(kv, faults, 0, new CopyOnWriteArrayList<>()));
            gate.awaitParked(TIMEOUT);
            stream.close();

            assertThat(parked.isDone()).isTrue();
            assertThatThrownBy(() -> parked.await(TIMEOUT))
                    .cause().hasMessage("interrupted while parked at forward: after layer");
        }
    }

    @Test
    void completedFenceIsDoneAtOnce()
            throws Exception
    {
        Fence fence = Fence.completed(7);
        fence.await(Duration.ZERO);
        assertThat(fence.step()).isEqualTo(7);
        assertThat(fence.isDone()).isTrue();
        assertThat(fence.failed()).isFalse();
        List<String> ran = new CopyOnWriteArrayList<>();
        fence.onComplete(() -> ran.add("now"));
        assertThat(ran).containsExactly("now");
    }
}
