package io.handoff.dist;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code handoff bench transfer} from the distribution: a sender and its receiver process move a small KV-shaped
 * payload through each backend's data path, the bytes that landed are verified, and the figures come with the
 * same run's references. No figure is asserted, only that each is there and sane.
 */
class BenchTransferIT
{
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] SMALL = {"--bytes", "1MiB", "--page-bytes", "16KiB", "--layers", "2", "--rounds", "2"};

    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource({"mooncake, shm, shm", "mori, shm, shm", "mooncake, tcp, tcp", "nixl, tcp, ucx:tcp"})
    void eachBackendMovesVerifiedScatteredPagesWithItsSameRunReferences(String backend, String transport, String reported)
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, with("bench", "transfer", "--transfer-backend", backend, "--transport", transport, "--scatter", "--json"));

        assertThat(run.exitCode()).as(run.describe()).isZero();
        JsonNode json = JSON.readTree(run.stdout());
        assertThat(json.get("backend").asText()).isEqualTo(backend);
        assertThat(json.get("transport").asText()).isEqualTo(reported);
        assertThat(json.get("bytes").asLong()).isEqualTo(1 << 20);
        assertThat(json.get("page_bytes").asLong()).isEqualTo(16 << 10);
        assertThat(json.get("layers").asInt()).isEqualTo(2);
        assertThat(json.get("scatter").asBoolean()).isTrue();
        assertThat(json.get("rounds").asInt()).isEqualTo(2);
        assertThat(json.get("gbps").get("median").asDouble()).isPositive();
        assertThat(json.get("gbps").get("min").asDouble()).isPositive().isLessThanOrEqualTo(json.get("gbps").get("max").asDouble());
        assertThat(json.get("memcpy_gbps").asDouble()).isPositive();
        assertThat(json.get("ratio_memcpy").asDouble()).isPositive();
        assertThat(json.get("plans").asInt()).isEqualTo(1);
        assertThat(json.get("plan_bytes").asLong()).isEqualTo(1 << 20);
        assertThat(json.get("verified").asBoolean()).isTrue();
        assertThat(receivers()).as("receiver processes left running").isEmpty();
        if (backend.equals("nixl") || transport.equals("tcp")) {
            // a figure when ucx-utils is installed, else null and the reason
            assertThat(json.get("ucx_perftest_gbps").isNull() ? json.get("ucx_perftest_reason").asText() : json.get("ucx_perftest_gbps").asDouble() > 0)
                    .isIn("ucx_perftest is not installed (Debian package ucx-utils)", true);
        }
        else {
            assertThat(json.get("ucx_perftest_gbps").isNull()).isTrue();
            assertThat(json.get("ratio_ucx_perftest").isNull()).isTrue();
            assertThat(json.get("ucx_perftest_reason").asText()).contains("nixl and mooncake tcp only");
        }
    }

    @Test
    void aCorruptedDestinationFailsTheBenchAndReportsNoFigure()
            throws Exception
    {
        Launcher.Run run = Launcher.run(temp, with("bench", "transfer", "--transfer-backend", "mori", "--json", "--flip-byte-for-testing"));

        assertThat(run.exitCode()).as(run.describe()).isEqualTo(1);
        assertThat(run.stdout()).isEmpty();
        assertThat(run.stderr()).contains("the receiver's pool does not hold the pages mori sent (regions 0 differ from what was sent)")
                .contains("no figure is reported");
        assertThat(receivers()).as("receiver processes left running").isEmpty();
    }

    @Test
    void outWritesTheReportWithTheBandwidthChartOverPageSizes()
            throws Exception
    {
        Path out = temp.resolve("report");
        Launcher.Run run = Launcher.run(temp, "bench", "transfer", "--transfer-backend", "mori", "--bytes", "1MiB", "--layers", "2", "--rounds", "1",
                "--out", out.toString());

        assertThat(run.exitCode()).as(run.describe()).isZero();
        assertThat(run.stdout()).contains("bench transfer: mori over shm").contains("bytes verified");
        String html = Files.readString(out.resolve("report.html"));
        assertThat(html).contains("<svg").contains("Bandwidth vs page size").contains("memcpy, same pages, 1 thread");
        JsonNode report = JSON.readTree(out.resolve("report.json").toFile());
        assertThat(report.get("result").get("verified").asBoolean()).isTrue();
        // the given 64KiB and the default sizes that fit 1MiB in 4 regions: 4KiB, 16KiB, 256KiB
        assertThat(report.get("result").get("chart_sweep")).hasSize(4);
    }

    @Test
    void badOptionsAndUnknownBackendsAreRefusedWithWhatToDo()
            throws Exception
    {
        Launcher.Run unknown = Launcher.run(temp, "bench", "transfer", "--transfer-backend", "nosuch", "--bytes", "1MiB");
        assertThat(unknown.exitCode()).as(unknown.describe()).isEqualTo(1);
        assertThat(unknown.stderr()).contains("no transfer backend 'nosuch'").contains("available: mooncake, mori, nixl");

        Launcher.Run misfit = Launcher.run(temp, "bench", "transfer", "--transfer-backend", "mori", "--bytes", "1000KiB", "--page-bytes", "64KiB");
        assertThat(misfit.exitCode()).as(misfit.describe()).isEqualTo(2);
        assertThat(misfit.stderr()).contains("--bytes 1000KiB is not a whole number of pages").contains("--bytes 1MiB fits");

        Launcher.Run size = Launcher.run(temp, "bench", "transfer", "--transfer-backend", "mori", "--page-bytes", "64KB/s");
        assertThat(size.exitCode()).as(size.describe()).isEqualTo(2);
        assertThat(size.stderr()).contains("--page-bytes '64KB/s' is not a size");

        // --backend: the old spelling, still read
        Launcher.Run transport = Launcher.run(temp, "bench", "transfer", "--backend", "mori", "--transport", "tcp");
        assertThat(transport.exitCode()).as(transport.describe()).isEqualTo(2);
        assertThat(transport.stderr()).contains("mori moves pages over shared memory on one host only");
    }

    /** Live receiver processes of bench transfer (the command stops its own before it exits). */
    /** Receivers of this build's distribution still running (another checkout's runs on the same machine are not ours). */
    private static List<String> receivers()
            throws java.io.IOException
    {
        String home = "-Dhandoff.home=" + Launcher.DIST.toRealPath() + " ";
        return ProcessHandle.allProcesses()
                .filter(ProcessHandle::isAlive)
                .map(process -> process.info().commandLine().orElse(""))
                .filter(line -> line.contains("bench transfer-receiver") && line.contains(home))
                .toList();
    }

    private static String[] with(String... args)
    {
        String[] all = new String[args.length + SMALL.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(SMALL, 0, all, args.length, SMALL.length);
        return all;
    }
}
