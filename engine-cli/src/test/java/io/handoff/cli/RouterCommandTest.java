package io.handoff.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class RouterCommandTest
{
    @Test
    void withoutAPrefillItIsAUsageErrorThatSaysWhatIsMissing()
    {
        Result result = run("router", "--decode", "http://127.0.0.1:30001");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("at least one --prefill URL is required", "see 'handoff router --help'");
    }

    @Test
    void withoutADecodeItIsAUsageError()
    {
        Result result = run("router", "--prefill", "http://127.0.0.1:30000");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("at least one --decode URL is required");
    }

    @Test
    void aMalformedOrRepeatedUrlIsAUsageError()
    {
        Result malformed = run("router", "--prefill", "ftp://h:1", "--decode", "127.0.0.1:30001");
        Result repeated = run("router", "--prefill", "127.0.0.1:30000", "--decode", "http://127.0.0.1:30000");

        assertThat(malformed.exitCode()).isEqualTo(Main.USAGE);
        assertThat(malformed.stderr()).contains("--prefill: 'ftp://h:1' is not an http:// or https:// URL");
        assertThat(repeated.exitCode()).isEqualTo(Main.USAGE);
        assertThat(repeated.stderr()).contains("--decode: http://127.0.0.1:30000 is given more than once");
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
