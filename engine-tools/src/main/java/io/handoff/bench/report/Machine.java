package io.handoff.bench.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** The machine a report was measured on: CPU model, cores, memory, OS and JVM. */
final class Machine
{
    private Machine() {}

    static ObjectNode describe(ObjectMapper mapper)
    {
        ObjectNode node = mapper.createObjectNode();
        node.put("cpu", cpuModel());
        node.put("cores", Runtime.getRuntime().availableProcessors());
        node.put("max_heap_bytes", Runtime.getRuntime().maxMemory());
        node.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        node.put("java", System.getProperty("java.vm.name") + " " + Runtime.version());
        return node;
    }

    static String summary()
    {
        return String.format(Locale.ROOT, "%s, %d cores, %s, Java %s", cpuModel(), Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name") + " " + System.getProperty("os.arch"), Runtime.version());
    }

    private static String cpuModel()
    {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        }
        catch (IOException | RuntimeException e) {
            // not Linux, or not readable: say so below
        }
        return "unknown CPU";
    }
}
