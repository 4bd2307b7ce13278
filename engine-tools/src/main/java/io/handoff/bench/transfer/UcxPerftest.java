package io.handoff.bench.transfer;

import io.handoff.demo.FreePorts;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * UCX's own put bandwidth on the transport a backend uses: {@code ucx_perftest -t ucp_put_bw} with a server and a
 * client process on loopback, at the message size the backend sends. Its final line's "overall" bandwidth column
 * (MB/s of 2^20 bytes) is the figure.
 */
final class UcxPerftest
{
    static final String EXECUTABLE = "ucx_perftest";
    private static final int ATTEMPTS = 50;

    /** A figure, or why there is none. */
    record Result(Double gbps, String reason) {}

    private final Path executable;

    private UcxPerftest(Path executable)
    {
        this.executable = executable;
    }

    /** The {@code ucx_perftest} on the PATH, if any. */
    static Optional<UcxPerftest> find()
    {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String folder : path.split(File.pathSeparator)) {
            Path candidate = Path.of(folder.isEmpty() ? "." : folder, EXECUTABLE);
            if (Files.isExecutable(candidate)) {
                return Optional.of(new UcxPerftest(candidate));
            }
        }
        return Optional.empty();
    }

    /**
     * @param environment UCX variables for both processes (UCX_TLS, UCX_NET_DEVICES)
     * @param messageBytes bytes per put
     * @param totalBytes about how many bytes to put in all
     */
    Result measure(Map<String, String> environment, long messageBytes, long totalBytes)
            throws IOException, InterruptedException
    {
        long iterations = Math.max(100, Math.min(1_000_000, totalBytes / messageBytes));
        int port = FreePorts.allocate(1).getFirst();
        List<String> common = List.of("-p", Integer.toString(port));
        Process server = start(environment, common);
        try {
            List<String> client = new ArrayList<>(List.of("127.0.0.1"));
            client.addAll(common);
            client.addAll(List.of("-t", "ucp_put_bw", "-s", Long.toString(messageBytes), "-n", Long.toString(iterations), "-w",
                    Long.toString(Math.max(10, iterations / 10)), "-f"));
            String output = "";
            for (int attempt = 0; attempt < ATTEMPTS && server.isAlive(); attempt++) {
                Process process = start(environment, client);
                if (!process.waitFor(5, TimeUnit.MINUTES)) {
                    process.destroyForcibly();
                    return new Result(null, "ucx_perftest did not finish within 5 minutes");
                }
                output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (process.exitValue() == 0) {
                    Double megabytes = overallBandwidth(output);
                    return megabytes == null
                            ? new Result(null, "ucx_perftest printed no bandwidth line: " + lastLine(output))
                            : new Result(megabytes * (1 << 20) / 1e9, null);
                }
                // the server may not be listening yet
                Thread.sleep(100);
            }
            return new Result(null, "ucx_perftest failed: " + lastLine(output));
        }
        finally {
            server.destroyForcibly();
            server.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private Process start(Map<String, String> environment, List<String> arguments)
            throws IOException
    {
        List<String> command = new ArrayList<>(List.of(executable.toString()));
        command.addAll(arguments);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        builder.environment().keySet().removeIf(name -> name.startsWith("UCX_"));
        builder.environment().putAll(environment);
        return builder.start();
    }

    /** The "overall" bandwidth (MB/s) of the final numbers line: iterations, three overheads, two bandwidths, two rates. */
    static Double overallBandwidth(String output)
    {
        Double found = null;
        for (String line : output.lines().toList()) {
            String[] fields = line.strip().split("\\s+");
            if (fields.length != 8) {
                continue;
            }
            try {
                for (String field : fields) {
                    Double.parseDouble(field);
                }
                found = Double.parseDouble(fields[5]);
            }
            catch (NumberFormatException e) {
                // a header or table line
            }
        }
        return found;
    }

    private static String lastLine(String output)
    {
        List<String> lines = output.lines().filter(line -> !line.isBlank()).toList();
        return lines.isEmpty() ? "(no output)" : lines.getLast().strip();
    }
}
