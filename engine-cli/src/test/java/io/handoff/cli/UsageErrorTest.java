package io.handoff.cli;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A usage error is exit 2, one line that says what was wrong and one that says where the help is; never the whole help. */
class UsageErrorTest
{
    @Test
    void anUnknownOptionIsNamedWithTheNearestOne()
    {
        CliRun run = CliRun.of("serve", "--prot", "30000");

        assertThat(run.exitCode()).isEqualTo(Main.USAGE);
        assertThat(run.stderr().lines().toList()).containsExactly(
                "handoff serve: Unknown options: '--prot', '30000' (did you mean --port?)",
                "see 'handoff serve --help'");
    }

    @Test
    void aMistypedCommandIsNamedWithTheNearestOne()
    {
        CliRun run = CliRun.of("serv", "--port", "0");

        assertThat(run.exitCode()).isEqualTo(Main.USAGE);
        assertThat(run.stderr().lines().toList()).hasSize(2);
        assertThat(run.stderr()).contains("'serv'", "(did you mean serve?)", "see 'handoff --help'");
    }

    @Test
    void anInvalidSamplingValueIsAUsageErrorInTheOptionsWords()
    {
        CliRun run = CliRun.of("generate", "--prompt", "x", "--temperature", "-1");

        assertThat(run.exitCode()).isEqualTo(Main.USAGE);
        assertThat(run.stderr().lines().toList()).containsExactly(
                "handoff generate: --temperature must be finite and >= 0, was -1.0",
                "see 'handoff generate --help'");
    }

    @Test
    void aValueOfTheWrongFormIsAUsageError()
    {
        assertThat(CliRun.of("serve", "--kv-dtype", "f8").stderr()).startsWith("handoff serve: --kv-dtype must be auto, f32, bf16 or f16, got 'f8'");
        assertThat(CliRun.of("serve", "--kv-pool-memory", "lots").exitCode()).isEqualTo(Main.USAGE);
        assertThat(CliRun.of("serve", "--threads", "-3").exitCode()).isEqualTo(Main.USAGE);
        assertThat(CliRun.of("generate", "--prompt", "x", "--top-p", "0").exitCode()).isEqualTo(Main.USAGE);
        assertThat(CliRun.of("serve", "--port", "many").stderr().lines().count()).isEqualTo(2);
    }

    @Test
    void aPluginIdOrKindThatCannotBeIsAUsageError()
    {
        CliRun badId = CliRun.of("sdk", "new-plugin", "--id", "Bad_Id", "--kind", "transfer", "unused-folder");
        CliRun badKind = CliRun.of("sdk", "new-plugin", "--id", "fine", "--kind", "compute", "unused-folder");

        assertThat(badId.exitCode()).isEqualTo(Main.USAGE);
        assertThat(badId.stderr()).startsWith("handoff sdk new-plugin: --id 'Bad_Id' is not a plugin id");
        assertThat(badKind.exitCode()).isEqualTo(Main.USAGE);
        assertThat(badKind.stderr()).contains("--kind is 'compute': use transfer or attention");
    }

    @Test
    void aDurationNeedsItsUnit()
    {
        assertThat(DurationConverter.parse("500ms")).hasMillis(500);
        assertThat(DurationConverter.parse("30s")).hasSeconds(30);
        assertThat(DurationConverter.parse("2m")).hasMinutes(2);
        assertThat(DurationConverter.parse("1h")).hasHours(1);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> DurationConverter.parse("120"))
                .hasMessage("'120' is not a duration: write a whole number with a unit, e.g. 500ms, 30s, 2m or 1h");
    }
}
