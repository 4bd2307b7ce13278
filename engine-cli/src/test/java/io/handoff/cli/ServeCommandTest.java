package io.handoff.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class ServeCommandTest
{
    @Test
    void unknownRoleIsAUsageError()
    {
        Result result = run("serve", "--role", "router");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("unknown --role 'router': expected colocated");
    }

    @Test
    void aRefusalIsPrintedAsItsMessageWithoutAnExceptionType()
    {
        Result result = run("serve", "--port", "0", "-Dhandoff.attention.backend=no-such-kernel");

        assertThat(result.exitCode()).isEqualTo(1);
        assertThat(result.stderr()).contains("handoff serve: no attention backend 'no-such-kernel' (handoff.attention.backend)")
                .doesNotContain("java.lang.");
    }

    private record Result(int exitCode, String stderr) {}

    private static Result run(String... args)
    {
        PrintStream original = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            return new Result(Main.run(args), err.toString(StandardCharsets.UTF_8));
        }
        finally {
            System.setErr(original);
        }
    }
}
