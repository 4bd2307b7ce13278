package io.handoff.core.fault;

import io.handoff.core.fault.FaultPlan.Match;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FaultSpecTest
{
    @Test
    void aSampledMatchChoosesAboutItsRateOfConsecutiveRoomsAndTheSameOnesForTheSameSeed()
    {
        Match first = Match.sampled(0.05, 7);
        Match again = Match.sampled(0.05, 7);
        Match otherSeed = Match.sampled(0.05, 8);
        long start = 123_456_789L;
        long chosen = LongStream.range(start, start + 20_000).filter(first::test).count();
        // 5% of 20000 is 1000; a fair hash stays well within 10% of it
        assertThat(chosen).isBetween(900L, 1100L);
        assertThat(LongStream.range(start, start + 20_000).allMatch(room -> first.test(room) == again.test(room))).isTrue();
        long same = LongStream.range(start, start + 20_000).filter(room -> first.test(room) && otherSeed.test(room)).count();
        // independent choices overlap in about 0.25% of rooms, not in 5%
        assertThat(same).isLessThan(150L);
    }

    @Test
    void aSampledMatchAtRateOneChoosesEveryValue()
    {
        Match all = Match.sampled(1, 3);
        assertThat(LongStream.range(-500, 500).allMatch(all::test)).isTrue();
    }

    @Test
    void aRateRuleFailsOnlyTheChosenRoomsOnEveryHit()
    {
        FaultInjector plan = FaultSpec.parse(List.of("transfer-before-chunk rate=0.25 seed=11 fail"));
        Match chosen = Match.sampled(0.25, 11);
        int failed = 0;
        for (long room = 1000; room < 1400; room++) {
            long r = room;
            if (chosen.test(room)) {
                assertThatThrownBy(() -> plan.hit(FaultPoint.TRANSFER_BEFORE_CHUNK, r, 0)).isInstanceOf(InjectedFault.class);
                assertThatThrownBy(() -> plan.hit(FaultPoint.TRANSFER_BEFORE_CHUNK, r, 1)).isInstanceOf(InjectedFault.class);
                failed++;
            }
            else {
                assertThatCode(() -> plan.hit(FaultPoint.TRANSFER_BEFORE_CHUNK, r, 0)).doesNotThrowAnyException();
            }
        }
        assertThat(failed).isBetween(70, 130);
    }

    @Test
    void corruptFlipsOneBitOfTheChosenRoomsPagesAndLeavesTheOthersAlone()
    {
        FaultInjector plan = FaultSpec.parse(List.of("decode-before-verify a=42 corrupt=1"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(64);
            page.fill((byte) 0x30);
            plan.hit(FaultPoint.DECODE_BEFORE_VERIFY, 41, 5, page);
            assertThat(page.toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0x30);

            plan.hit(FaultPoint.DECODE_BEFORE_VERIFY, 42, 5, page);
            byte[] bytes = page.toArray(ValueLayout.JAVA_BYTE);
            assertThat(bytes[0]).isEqualTo((byte) 0x31);
            for (int i = 1; i < bytes.length; i++) {
                assertThat(bytes[i]).isEqualTo((byte) 0x30);
            }

            // corrupt=1: the second hit of room 42 passes untouched
            plan.hit(FaultPoint.DECODE_BEFORE_VERIFY, 42, 6, page);
            assertThat(page.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0x31);
        }
    }

    @Test
    void aDelayRuleWithARateParsesAndLetsUnchosenRoomsThroughAtOnce()
    {
        FaultInjector plan = FaultSpec.parse(List.of("transfer-before-chunk rate=0.01 seed=2 delay=5s"));
        Match chosen = Match.sampled(0.01, 2);
        long room = LongStream.range(0, 1000).filter(r -> !chosen.test(r)).findFirst().orElseThrow();
        long start = System.nanoTime();
        plan.hit(FaultPoint.TRANSFER_BEFORE_CHUNK, room, 0);
        assertThat(System.nanoTime() - start).isLessThan(1_000_000_000L);
    }

    @Test
    void badRulesAreRefusedWithWhatIsWrongAndTheForm()
    {
        assertRefused("transfer-before-chunk rate=0 fail", "rate 0 is not in (0, 1]");
        assertRefused("transfer-before-chunk rate=1.5 fail", "rate 1.5 is not in (0, 1]");
        assertRefused("transfer-before-chunk rate=often fail", "rate 'often' is not a number");
        assertRefused("transfer-before-chunk a=3 rate=0.1 fail", "give one of the two");
        assertRefused("transfer-before-chunk seed=4 fail", "give rate=R with it");
        assertRefused("transfer-after-page rate=0.1 corrupt", "'transfer-after-page' carries no bytes to corrupt");
        assertRefused("decode-before-verify corrupt=x", "'x' is not a number");
        assertRefused("transfer-before-chunk rate=0.1 explode", "unknown action 'explode'");
    }

    private static void assertRefused(String rule, String problem)
    {
        assertThatThrownBy(() -> FaultSpec.parse(List.of(rule)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("handoff.debug.faults: '" + rule + "'")
                .hasMessageContaining(problem)
                .hasMessageContaining("(form: POINT [a=N | rate=R [seed=N]] [b=N]");
    }
}
