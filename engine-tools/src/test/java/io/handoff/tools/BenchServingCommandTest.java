package io.handoff.tools;

import io.handoff.cli.Main;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** handoff bench serving's own refusals: bad option values are usage errors naming the value, an unreachable URL a failure that says so. */
class BenchServingCommandTest
{
    @Test
    void aUrlNobodyListensOnIsAFailureThatSaysSo()
            throws Exception
    {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }

        Result result = run("bench", "serving", "--url", "http://127.0.0.1:" + port, "--requests", "2");

        assertThat(result.exitCode()).isEqualTo(Main.FAILURE);
        assertThat(result.stderr()).contains("handoff bench serving: http://127.0.0.1:" + port + ": cannot connect",
                "is a handoff server or router listening there?");
    }

    @Test
    void badOptionValuesAreUsageErrorsThatSayWhatIsAllowed()
    {
        Result both = run("bench", "serving", "--url", "http://127.0.0.1:1", "--rate", "2", "--concurrency", "2");
        Result dataset = run("bench", "serving", "--url", "http://127.0.0.1:1", "--dataset", "sharegpt");
        Result url = run("bench", "serving", "--url", "localhost:30000");
        Result rate = run("bench", "serving", "--url", "http://127.0.0.1:1", "--rate", "fast");

        assertThat(both.exitCode()).isEqualTo(Main.USAGE);
        assertThat(both.stderr()).contains("give --rate R (open loop) or --concurrency C (closed loop), not both");
        assertThat(dataset.exitCode()).isEqualTo(Main.USAGE);
        assertThat(dataset.stderr()).contains("--dataset must be one of shared-prefix, random, long-prompt, mixed, multi-turn; was 'sharegpt'");
        assertThat(url.exitCode()).isEqualTo(Main.USAGE);
        assertThat(url.stderr()).contains("--url must be an http:// URL such as http://127.0.0.1:30000, was 'localhost:30000'");
        assertThat(rate.exitCode()).isEqualTo(Main.USAGE);
        assertThat(rate.stderr()).contains("--rate must be a positive number of requests per second or inf, was 'fast'");
    }

    @Test
    void aModelPathThatIsNoCheckpointIsAUsageErrorNamingIt()
    {
        Result result = run("bench", "serving", "--url", "http://127.0.0.1:1", "--model-path", "/nonexistent/model");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("--model-path: ", "/nonexistent/model is not a directory or a .gguf file");
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
