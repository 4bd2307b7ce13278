package io.handoff.tools;

import io.handoff.cli.Main;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** handoff inspect's own refusals: what it needs on its command line, and a node it cannot reach. */
class InspectCommandTest
{
    @Test
    void withoutAUrlOrARidItIsAUsageErrorThatSaysWhatIsMissing()
    {
        Result noUrl = run("inspect", "--rid", "r1");
        Result noRid = run("inspect", "http://127.0.0.1:30000");

        assertThat(noUrl.exitCode()).isEqualTo(Main.USAGE);
        assertThat(noUrl.stderr()).contains("URL", "see 'handoff inspect --help'");
        assertThat(noRid.exitCode()).isEqualTo(Main.USAGE);
        assertThat(noRid.stderr()).contains("--rid");
    }

    @Test
    void aMalformedUrlIsAUsageErrorNamingIt()
    {
        Result result = run("inspect", "--rid", "r1", "ftp://h:1");

        assertThat(result.exitCode()).isEqualTo(Main.USAGE);
        assertThat(result.stderr()).contains("'ftp://h:1' is not an http:// or https:// URL");
    }

    @Test
    void aNodeNobodyListensOnIsAFailureThatSaysSo()
            throws Exception
    {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }

        Result result = run("inspect", "--rid", "r1", "--timeout", "2s", "http://127.0.0.1:" + port);

        assertThat(result.exitCode()).isEqualTo(Main.FAILURE);
        assertThat(result.stderr()).contains("handoff inspect: http://127.0.0.1:" + port + ": cannot connect",
                "is a handoff server or router listening there?");
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
