package io.handoff.cli;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

import static org.assertj.core.api.Assertions.assertThat;

class RouterCommandTest
{
    @Test
    void withoutAPrefillItIsAUsageErrorThatSaysWhatIsMissing()
    {
        CliRun result = run("router", "--decode", "http://127.0.0.1:30001");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("at least one --prefill URL is required", "see 'handoff router --help'");
    }

    @Test
    void withoutADecodeItIsAUsageError()
    {
        CliRun result = run("router", "--prefill", "http://127.0.0.1:30000");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("at least one --decode URL is required");
    }

    @Test
    void aMalformedOrRepeatedUrlIsAUsageError()
    {
        CliRun malformed = run("router", "--prefill", "ftp://h:1", "--decode", "127.0.0.1:30001");
        CliRun repeated = run("router", "--prefill", "127.0.0.1:30000", "--decode", "http://127.0.0.1:30000");

        assertThat(malformed.exitCode()).isEqualTo(Main.USAGE);
        assertThat(malformed.stderr()).contains("--prefill: 'ftp://h:1' is not an http:// or https:// URL");
        assertThat(repeated.exitCode()).isEqualTo(Main.USAGE);
        assertThat(repeated.stderr()).contains("--decode: http://127.0.0.1:30000 is given more than once");
    }

    @Test
    void aPortAnotherProgramHoldsEndsItWithTheTakenAddressExitCode()
            throws IOException
    {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            CliRun result = run("router", "--host", "127.0.0.1", "--port", Integer.toString(port), "--prefill", "http://127.0.0.1:30000",
                    "--decode", "http://127.0.0.1:30001");

            assertThat(result.exitCode()).isEqualTo(Main.ADDRESS_IN_USE);
            assertThat(result.stderr()).contains("cannot listen on 127.0.0.1:" + port, "choose another address with --host/--port");
        }
    }

    private static CliRun run(String... args)
    {
        return CliRun.of(args);
    }
}
