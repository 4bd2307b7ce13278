package io.handoff.plugin.nixl;

import io.handoff.core.transfer.TransferLink;
import io.handoff.spi.transfer.ProducerFence;
import io.handoff.spi.transfer.RoomKey;
import io.handoff.spi.transfer.TransferBackend;
import io.handoff.spi.transfer.TransferPeer;
import io.handoff.spi.transfer.TransferPlan;
import io.handoff.testkit.transfer.Link;
import io.handoff.testkit.transfer.Outcome;
import io.handoff.testkit.transfer.Pool;
import io.handoff.testkit.transfer.RecordingContext;
import io.handoff.testkit.transfer.ReferenceSettings;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

import static io.handoff.testkit.transfer.Plans.bytesOf;
import static io.handoff.testkit.transfer.Plans.pagesOf;
import static io.handoff.testkit.transfer.Plans.plan;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A prefill and a decode in two processes, as deployed: the worker address, region addresses and remote keys in the
 * descriptor are meaningful in another process, and a put lands in the other process's pool.
 */
class CrossProcessTest
{
    @TempDir
    Path folder;

    @BeforeAll
    static void ucx()
    {
        Ucx.assumeAvailable();
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "posix,self"})
    void putsLandInAnotherProcesssPool(String tls)
            throws Exception
    {
        Process decode = new ProcessBuilder(javaCommand(tls)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        // Closing the decode's input is its signal to close its backend and exit.
        PrintWriter in = new PrintWriter(decode.getOutputStream(), true, StandardCharsets.UTF_8);
        try (BufferedReader out = new BufferedReader(new InputStreamReader(decode.getInputStream(), StandardCharsets.UTF_8));
                Pool source = Pool.anonymous().fill(0)) {
            String announced = reply(out);
            assertThat(announced).startsWith("descriptor ");
            TransferBackend sender = new NixlProvider().open(new RecordingContext("prefill-process", folder),
                    ReferenceSettings.of(new NixlProvider()).with("tls", tls));
            try {
                sender.registerSources(source.regions());
                TransferPeer peer = sender.connect("decode-process", Base64.getDecoder().decode(announced.substring("descriptor ".length())));
                TransferPlan plan = plan(new RoomKey(3, 0), 0, 0, ProducerFence.DONE, new int[] {4, 40, 3}, new int[] {20, 1, 5});
                try (TransferLink link = Link.start("nixl", peer, source.regions())) {
                    Outcome outcome = new Outcome();
                    link.post(plan, outcome);

                    assertThat(outcome.await()).isEqualTo(new Outcome.Result(bytesOf(plan), null));
                    in.println(check(pagesOf(plan)));
                    assertThat(reply(out)).isEqualTo("landed");
                }
            }
            finally {
                sender.close();
                in.close();
            }
            assertThat(decode.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(decode.exitValue()).isZero();
        }
        finally {
            in.close();
            decode.destroyForcibly();
        }
    }

    /** The decode's next protocol line; UCX may print its own lines to the same stdout. */
    private static String reply(BufferedReader out)
            throws java.io.IOException
    {
        for (String line; (line = out.readLine()) != null; ) {
            if (line.startsWith(ReceiverProcess.REPLY)) {
                return line.substring(ReceiverProcess.REPLY.length());
            }
        }
        return "<the decode process closed its output>";
    }

    private static String check(Map<Integer, Integer> dstToSrc)
    {
        StringJoiner line = new StringJoiner(" ", "check ", "");
        dstToSrc.forEach((dst, src) -> line.add(src + ":" + dst));
        return line.toString();
    }

    private static List<String> javaCommand(String tls)
            throws URISyntaxException
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-cp");
        command.add(location(NixlProvider.class) + java.io.File.pathSeparator + location(ReceiverProcess.class)
                + java.io.File.pathSeparator + location(TransferBackend.class)
                // the receiver's pool, context and settings come from the transfer test kit
                + java.io.File.pathSeparator + location(Pool.class)
                // the test kit's ReferenceSettings reads the plugin's settings with the engine core's configuration code
                + java.io.File.pathSeparator + location(onTestPath("io.handoff.core.config.HandoffConfig", "the engine core"))
                // which reads them with Typesafe Config
                + java.io.File.pathSeparator + location(onTestPath("com.typesafe.config.ConfigFactory", "Typesafe Config")));
        command.add(ReceiverProcess.class.getName());
        command.add(tls);
        return command;
    }

    private static Class<?> onTestPath(String className, String what)
    {
        try {
            return Class.forName(className);
        }
        catch (ClassNotFoundException e) {
            throw new IllegalStateException(what + " is not on the test path", e);
        }
    }

    private static String location(Class<?> type)
            throws URISyntaxException
    {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
