package io.handoff.tools;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The hidden old spellings of renamed flags (docs/cli.md) set what the new flag sets, and are not overwritten by the new
 * flag's default when only the old one is given.
 */
class OldSpellingsTest
{
    @Test
    void benchComputeRepeatsSetsTheRounds()
    {
        BenchCommand.Compute compute = new BenchCommand.Compute();
        new CommandLine(compute).parseArgs("--repeats", "7");
        assertEquals(7, compute.repeats);
        BenchCommand.Compute byDefault = new BenchCommand.Compute();
        new CommandLine(byDefault).parseArgs();
        assertEquals(3, byDefault.repeats);
    }

    @Test
    void demoPrefillsAndDecodesSetTheServerCounts()
    {
        DemoCommand demo = new DemoCommand();
        new CommandLine(demo).parseArgs("--prefills", "3", "--decodes", "2");
        assertEquals(3, demo.prefills);
        assertEquals(2, demo.decodes);
        DemoCommand byDefault = new DemoCommand();
        new CommandLine(byDefault).parseArgs();
        assertEquals(1, byDefault.prefills);
        assertEquals(1, byDefault.decodes);
    }

    @Test
    void chaosPrefillsAndStallMillisSetThePrefillsAndTheStall()
    {
        ChaosCommand chaos = new ChaosCommand();
        new CommandLine(chaos).parseArgs("--prefills", "2", "--stall-ms", "350");
        assertEquals(2, chaos.prefills);
        assertEquals(Duration.ofMillis(350), chaos.stall);
        ChaosCommand byDefault = new ChaosCommand();
        new CommandLine(byDefault).parseArgs();
        assertEquals(1, byDefault.prefills);
        assertEquals(Duration.ofMillis(200), byDefault.stall);
    }
}
