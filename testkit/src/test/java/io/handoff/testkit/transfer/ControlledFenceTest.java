package io.handoff.testkit.transfer;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ControlledFenceTest
{
    @Test
    void holdsItsWaiterUntilTheTestFinishesOrFailsItAndSaysItWasAwaited()
            throws Exception
    {
        ControlledFence fence = new ControlledFence(4);
        assertThat(fence.wasAwaited()).isFalse();
        assertThatThrownBy(() -> fence.await(Duration.ofMillis(1))).isInstanceOf(TimeoutException.class).hasMessage("step 4 not done");
        assertThat(fence.wasAwaited()).isTrue();
        fence.awaitWaiter();

        fence.fail();
        assertThat(fence.isDone()).isTrue();
        assertThatThrownBy(() -> fence.await(Duration.ofSeconds(30))).isInstanceOf(IllegalStateException.class).hasMessage("step 4 failed");
    }
}
